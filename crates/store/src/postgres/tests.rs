use super::*;

#[test]
fn the_database_is_named_without_the_password() {
    for (url, named) in [
        (
            "postgres://alice:s3cret@db.example:6543/runs?sslmode=disable",
            "postgres://alice@db.example:6543/runs",
        ),
        ("postgresql://h/db", "postgres://h:5432/db"),
        (
            "postgres://bob@[::1]:5432/x?password=s3cret",
            "postgres://bob@[::1]:5432/x",
        ),
        (
            "host=/run/postgresql user=carol password=s3cret dbname=d",
            "postgres://carol@/run/postgresql/d",
        ),
    ] {
        let config: Config = url.parse().unwrap();
        let described = describe_database(&config);
        assert_eq!(described, named);
        assert!(!described.contains("s3cret"));
    }
}

#[tokio::test]
async fn a_bad_or_empty_url_is_a_usage_error_without_the_password() {
    for url in ["", "postgres://u:s3cret@h:notaport/db", "nonsense=1"] {
        let Err(e) = connect(url).await else {
            panic!("{url} connected")
        };
        assert!(matches!(e, StoreError::Url(_)), "{url}: {e}");
        assert_eq!(e.status(), crate::outcome::Status::Usage);
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}

#[test]
fn migrations_are_numbered_in_order_from_one() {
    let versions: Vec<i32> = MIGRATIONS.iter().map(|(v, _)| *v).collect();
    assert_eq!(versions, (1..=MIGRATIONS.len() as i32).collect::<Vec<_>>());
}
