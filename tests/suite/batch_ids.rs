//! Job ids name files: `DIR/<stem>.jsonl`, `DIR/<stem>.outputs/`, `DIR/attempts/<stem>.N.jsonl`
//! and a queued job's `DIR/attempts/<stem>.<run id>.jsonl`, where the stem is the id with bytes
//! written `%XX`. An id whose longest name would pass `NAME_MAX` is a bad line of the jobs file,
//! refused exactly at that boundary, and an id at the boundary names files the file system
//! takes. (`batch_untrusted` runs a batch with such an id.)

use rounds::batch::jobs::{self, LONGEST_SUFFIX, MAX_STEM_BYTES, NAME_MAX};

/// The id as the only job of a jobs file: accepted, or the bad line's message.
fn parsed(id: &str) -> Result<(), String> {
    let line = serde_json::json!({"id": id, "prompt": "p"}).to_string();
    let parsed = jobs::parse(&line, None);
    match parsed.bad.first() {
        None if parsed.jobs.len() == 1 => Ok(()),
        None => Err("no job and no bad line".into()),
        Some(bad) => Err(bad.message.clone()),
    }
}

#[test]
fn ids_are_refused_exactly_where_their_longest_file_name_passes_name_max() {
    assert_eq!((NAME_MAX, LONGEST_SUFFIX, MAX_STEM_BYTES), (255, 36, 219));
    let max = MAX_STEM_BYTES;
    let at_the_limit = [
        "a".repeat(max),
        // Each byte of a character beyond ASCII is written %XX: 6 bytes for é, 12 for 😀.
        format!("{}abc", "é".repeat(36)),
        format!("{}abc", "😀".repeat(18)),
        // ASCII that is written %XX too.
        "/".repeat(73),
        "%".repeat(73),
        // A leading dot is written %2E; the others are kept.
        format!(".{}", "a".repeat(max - 3)),
        format!("a{}", ".".repeat(max - 1)),
    ];
    for id in &at_the_limit {
        assert_eq!(jobs::stem_len(id), max, "{id}");
        assert_eq!(jobs::file_stem(id).len(), max, "{id}");
        assert_eq!(parsed(id), Ok(()), "{id}");
        for past in [format!("{id}a"), format!("{id}é"), format!("{id} ")] {
            let err = parsed(&past).expect_err(&past);
            let says = format!("it takes {} bytes", jobs::stem_len(&past));
            assert!(err.starts_with("the id is too long to name files"), "{err}");
            assert!(err.contains(&says) && err.contains("at most 219"), "{err}");
        }
    }
    // The old rule counted the id's own bytes (at most 200): this id passed it and names a
    // 600-byte file; one of 219 plain bytes, which it refused, fits.
    let old = "é".repeat(100);
    assert_eq!(old.len(), 200);
    assert!(parsed(&old).is_err());
    assert_eq!(parsed(&"a".repeat(219)), Ok(()));
    // An integer id is far from the limit.
    assert_eq!(
        jobs::parse("{\"id\": 18446744073709551615, \"prompt\": \"p\"}", None)
            .jobs
            .len(),
        1
    );
}

#[test]
fn an_id_at_the_limit_names_every_file_a_batch_makes_for_it() {
    // The longest suffix is a queued job's exported run: every run id is as long as this one.
    let run_id = rounds::runs::new_id(jiff::Timestamp::MAX, u32::MAX);
    for t in [jiff::Timestamp::UNIX_EPOCH, jiff::Timestamp::now()] {
        assert_eq!(rounds::runs::new_id(t, 0).len(), run_id.len());
    }
    let id = format!("{}abc", "é".repeat(36));
    let stem = jobs::file_stem(&id);
    let names = [
        format!("{stem}.jsonl"),
        format!("{stem}.outputs"),
        format!("{stem}.10000.jsonl"),
        format!("{stem}.{run_id}.jsonl"),
    ];
    let suffixes: Vec<usize> = names.iter().map(|n| n.len() - stem.len()).collect();
    assert_eq!(suffixes.iter().max(), Some(&LONGEST_SUFFIX));
    assert_eq!(names[3].len(), NAME_MAX);

    let dir = tempfile::tempdir().unwrap();
    let attempts = dir.path().join("attempts");
    std::fs::create_dir(&attempts).unwrap();
    let longest = attempts.join(&names[3]);
    if let Err(e) = std::fs::write(&longest, "") {
        assert_eq!(e.raw_os_error(), Some(libc::ENAMETOOLONG), "{e}");
        eprintln!(
            "skipped: the temporary directory's file system takes names shorter than {NAME_MAX} \
             bytes"
        );
        return;
    }
    std::fs::write(dir.path().join(&names[0]), "").unwrap();
    std::fs::create_dir(dir.path().join(&names[1])).unwrap();
    std::fs::write(attempts.join(&names[2]), "").unwrap();

    // One byte more than the rule allows, and the longest name is refused: the rule is tight.
    let past = attempts.join(format!("{stem}a.{run_id}.jsonl"));
    let err = std::fs::write(&past, "").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENAMETOOLONG), "{err}");
}
