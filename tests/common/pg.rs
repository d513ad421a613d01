//! The PostgreSQL server the store tests run against: `ROUNDS_TEST_PG_URL` (`.ci/run` sets it,
//! with `ROUNDS_TEST_PG_CA` and the client certificate variables), or else a throwaway cluster
//! started once per test process from the machine's PostgreSQL binaries, with TLS from a CA made
//! here and a certificate-only role. With neither, `server()` says why and tests pass: a machine
//! without PostgreSQL is not a bug in rounds. Every test works in a schema of its own, so they run
//! in parallel and leave a shared server clean.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_postgres::NoTls;

/// A server to test against.
pub struct Pg {
    /// A superuser's URL, without sslmode.
    pub url: String,
    /// The CA that signed the server's certificate, when the server has TLS.
    pub ca: Option<PathBuf>,
    /// A role that pg_hba.conf lets in only with a client certificate, and that certificate.
    pub client: Option<ClientCert>,
}

/// Certificate login: `user` may connect over TLS only by presenting `cert` (signed by the CA).
pub struct ClientCert {
    pub user: String,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The role the certificate-only pg_hba.conf line is for (`.ci/run` uses the same).
const CERT_USER: &str = "rounds_cert";

/// The server, or why there is none.
static SERVER: OnceLock<Result<Pg, String>> = OnceLock::new();

/// The server to test against, or `None` (after saying why) when this machine has none.
pub fn server() -> Option<&'static Pg> {
    let server = SERVER.get_or_init(|| match std::env::var("ROUNDS_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => {
            let path = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
            let client = match (
                path("ROUNDS_TEST_PG_CLIENT_CERT"),
                path("ROUNDS_TEST_PG_CLIENT_KEY"),
            ) {
                (Some(cert), Some(key)) => Some(ClientCert {
                    user: CERT_USER.to_owned(),
                    cert: cert.into(),
                    key: key.into(),
                }),
                _ => None,
            };
            Ok(Pg {
                url,
                ca: path("ROUNDS_TEST_PG_CA").map(PathBuf::from),
                client,
            })
        }
        _ => start_cluster(),
    });
    match server {
        Ok(pg) => Some(pg),
        Err(why) => {
            eprintln!("skipping: no PostgreSQL for the store tests: {why}");
            None
        }
    }
}

/// A schema of the test's own, dropped when the test ends (also when it fails).
pub struct Schema {
    pub base: String,
    pub name: String,
    /// The server's URL with this schema as the search path: what `--store` gets.
    pub url: String,
}

impl Schema {
    pub fn new(pg: &Pg) -> Schema {
        let base = pg.url.as_str();
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!(
            "rounds_t{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        sql(base, &format!("CREATE SCHEMA {name}"));
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-csearch_path%3D{name}");
        Schema {
            base: base.to_owned(),
            name,
            url,
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = try_sql(&self.base, &format!("DROP SCHEMA {} CASCADE", self.name));
    }
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

pub fn try_sql(url: &str, query: &str) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
    block_on(async {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
        tokio::spawn(connection);
        client.query(query, &[]).await
    })
}

pub fn sql(url: &str, query: &str) -> Vec<tokio_postgres::Row> {
    try_sql(url, query).unwrap_or_else(|e| panic!("{query}: {e:?}"))
}

/// Starts a cluster that lives as long as this test process: initdb and pg_ctl from the local
/// PostgreSQL, as the `postgres` user when we are root (initdb refuses root), trust auth on
/// 127.0.0.1 and a free port. A watcher stops it and removes its files once the process is gone.
fn start_cluster() -> Result<Pg, String> {
    let bin = postgres_bin().ok_or("no initdb and pg_ctl found (install postgresql)")?;
    let root = rustix::process::geteuid().is_root();
    let dir = tempfile::Builder::new()
        .prefix("rounds-test-pg-")
        .tempdir()
        .map_err(|e| format!("cannot make a directory for the cluster: {e}"))?
        .keep();
    let as_owner = |program: &str| -> Vec<String> {
        let program = bin.join(program).display().to_string();
        if root {
            vec![
                "runuser".into(),
                "-u".into(),
                "postgres".into(),
                "--".into(),
                program,
            ]
        } else {
            vec![program]
        }
    };
    let data = dir.join("data");
    let log = dir.join("server.log");
    let step = |argv: Vec<String>| -> Result<(), String> {
        let output = dir.join("step.log");
        let file = std::fs::File::create(&output).map_err(|e| e.to_string())?;
        let status = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(file.try_clone().map_err(|e| e.to_string())?)
            .stderr(file)
            .status()
            .map_err(|e| format!("{}: {e}", argv[0]))?;
        if status.success() {
            Ok(())
        } else {
            let said = std::fs::read_to_string(&output).unwrap_or_default();
            let server = std::fs::read_to_string(&log).unwrap_or_default();
            Err(format!("{} failed: {said}{server}", argv.join(" ")))
        }
    };
    // TLS with a CA of our own when openssl is there, so the verifying sslmodes can be tested,
    // and the same CA checks client certificates.
    let ca = certificates(&dir);
    let client = ca.as_ref().and_then(|_| client_certificate(&dir));
    let mut tls = String::new();
    if ca.is_some() {
        tls = format!(
            " -c ssl=on -c ssl_cert_file={0}/server.crt -c ssl_key_file={0}/server.key \
             -c ssl_ca_file={0}/ca.pem",
            dir.display()
        );
    }
    if root {
        let owned = Command::new("chown")
            .arg("-R")
            .arg("postgres")
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !owned {
            let _ = std::fs::remove_dir_all(&dir);
            return Err("cannot give the cluster's directory to the postgres user".into());
        }
    }
    let mut initdb = as_owner("initdb");
    initdb.extend(
        [
            "-D",
            &data.display().to_string(),
            "-U",
            "rounds",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ]
        .map(String::from),
    );
    if let Err(e) = step(initdb) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    // pg_hba.conf takes the first line that matches: the certificate-only role goes first.
    if client.is_some() {
        let hba = data.join("pg_hba.conf");
        let rest = std::fs::read_to_string(&hba).unwrap_or_default();
        let line = format!("hostssl all {CERT_USER} 127.0.0.1/32 cert\n");
        if std::fs::write(&hba, line + &rest).is_err() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err("cannot write pg_hba.conf".into());
        }
    }
    // Another process may take the port between our probe and the server's bind: try a few.
    let mut last = String::new();
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let mut pg_ctl = as_owner("pg_ctl");
        pg_ctl.extend(
            [
                "-D",
                &data.display().to_string(),
                "-l",
                &log.display().to_string(),
                "-w",
                "-t",
                "60",
                "-o",
                &format!(
                    "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                     -c full_page_writes=off{tls}",
                    dir.display()
                ),
                "start",
            ]
            .map(String::from),
        );
        match step(pg_ctl) {
            Ok(()) => {
                watch(&as_owner("pg_ctl"), &data, &dir);
                let url = format!("postgres://rounds@127.0.0.1:{port}/postgres");
                let client = match client {
                    Some(c) => try_sql(&url, &format!("CREATE ROLE {CERT_USER} LOGIN"))
                        .ok()
                        .map(|_| c),
                    None => None,
                };
                return Ok(Pg { url, ca, client });
            }
            Err(e) => last = e,
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Err(last)
}

/// A CA and a server certificate for 127.0.0.1 signed by it, in `dir`; the CA's path, or `None`
/// when openssl cannot make them.
fn certificates(dir: &Path) -> Option<PathBuf> {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ext = dir.join("server.ext");
    std::fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .ok()?;
    let steps: [Vec<&str>; 3] = [
        [
            &["req", "-x509"][..],
            &ec,
            &["-days", "3", "-subj", "/CN=rounds test CA"],
        ]
        .concat(),
        [&["req"][..], &ec, &["-subj", "/CN=127.0.0.1"]].concat(),
        vec!["x509", "-req", "-days", "3", "-CAcreateserial"],
    ];
    let files: [&[&str]; 3] = [
        &[
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
        &["-keyout", "server.key", "-out", "server.csr"],
        &[
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-out",
            "server.crt",
            "-extfile",
            "server.ext",
        ],
    ];
    for (step, files) in steps.iter().zip(files) {
        if !openssl(dir, &[&step[..], files].concat()) {
            return None;
        }
    }
    use std::os::unix::fs::PermissionsExt;
    // The server refuses a key others can read.
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .ok()?;
    Some(dir.join("ca.pem"))
}

/// A client certificate for [`CERT_USER`] signed by the CA in `dir`, or `None` when openssl
/// cannot make one.
fn client_certificate(dir: &Path) -> Option<ClientCert> {
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=clientAuth\n",
    )
    .ok()?;
    let subject = format!("/CN={CERT_USER}");
    let steps: [&[&str]; 2] = [
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            &subject,
            "-keyout",
            "client.key",
            "-out",
            "client.csr",
        ],
        &[
            "x509",
            "-req",
            "-days",
            "3",
            "-CAcreateserial",
            "-in",
            "client.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-out",
            "client.crt",
            "-extfile",
            "client.ext",
        ],
    ];
    if !steps.iter().all(|step| openssl(dir, step)) {
        return None;
    }
    Some(ClientCert {
        user: CERT_USER.to_owned(),
        cert: dir.join("client.crt"),
        key: dir.join("client.key"),
    })
}

/// Runs `openssl ARGS` in `dir`; whether it succeeded.
fn openssl(dir: &Path, args: &[&str]) -> bool {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Stops the cluster and removes its directory once this test process has exited.
fn watch(pg_ctl: &[String], data: &Path, dir: &Path) {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let stop: Vec<String> = pg_ctl.iter().map(|a| quote(a)).collect();
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
         {stop} -D {data} -m immediate stop; rm -rf {dir}",
        pid = std::process::id(),
        stop = stop.join(" "),
        data = quote(&data.display().to_string()),
        dir = quote(&dir.display().to_string()),
    );
    // Its own session, and no pipes of ours: the test run must not wait for it.
    let _ = Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// A directory holding initdb and pg_ctl: Debian's versioned directories first, then PATH.
fn postgres_bin() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|d| has_both(d))
        .collect();
    debian.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(newest) = debian.pop() {
        return Some(newest);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).find(|d| has_both(d))
}

/// A cluster of one test's own, for tests that stop, restart or fill the server (the shared one
/// must stay up for the others): trust auth on 127.0.0.1, a port that stays the same across
/// restarts, no TLS. Stopped and removed when dropped.
pub struct Cluster {
    pub url: String,
    pg_ctl: Vec<String>,
    data: PathBuf,
    dir: PathBuf,
    options: String,
}

impl Cluster {
    /// Starts one with `max_connections`, or says why it cannot (then the test skips).
    pub fn start(max_connections: u32) -> Result<Cluster, String> {
        let bin = postgres_bin().ok_or("no initdb and pg_ctl found (install postgresql)")?;
        let root = rustix::process::geteuid().is_root();
        let dir = tempfile::Builder::new()
            .prefix("rounds-test-own-pg-")
            .tempdir()
            .map_err(|e| e.to_string())?
            .keep();
        let owner = |program: &str| -> Vec<String> {
            let program = bin.join(program).display().to_string();
            match root {
                true => ["runuser", "-u", "postgres", "--", &program]
                    .map(String::from)
                    .to_vec(),
                false => vec![program],
            }
        };
        if root
            && !Command::new("chown")
                .arg("-R")
                .arg("postgres")
                .arg(&dir)
                .status()
                .is_ok_and(|s| s.success())
        {
            return Err("cannot give the cluster's directory to the postgres user".into());
        }
        let data = dir.join("data");
        let mut initdb = owner("initdb");
        initdb.extend(
            [
                "-D",
                &data.display().to_string(),
                "-U",
                "rounds",
                "--auth=trust",
                "--no-locale",
                "--no-sync",
            ]
            .map(String::from),
        );
        run_quiet(&initdb)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off \
             -c max_connections={max_connections} -c superuser_reserved_connections=0",
            dir.display()
        );
        let cluster = Cluster {
            url: format!("postgres://rounds@127.0.0.1:{port}/postgres"),
            pg_ctl: owner("pg_ctl"),
            data,
            dir,
            options,
        };
        cluster.up()?;
        Ok(cluster)
    }

    /// Starts it again after [`Cluster::down`], on the same port.
    pub fn up(&self) -> Result<(), String> {
        let log = self.dir.join("server.log").display().to_string();
        self.pg_ctl(&["-l", &log, "-w", "-t", "60", "-o", &self.options, "start"])
    }

    /// Stops it, ending every session now (as a crash or an operator's fast stop would).
    pub fn down(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "fast", "-w", "stop"])
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let mut argv = self.pg_ctl.clone();
        argv.extend(["-D".to_owned(), self.data.display().to_string()]);
        argv.extend(args.iter().map(|a| a.to_string()));
        run_quiet(&argv)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A private cluster, or `None` after saying why there is none here.
pub fn own_cluster(max_connections: u32) -> Option<Cluster> {
    match Cluster::start(max_connections) {
        Ok(c) => Some(c),
        Err(why) => {
            eprintln!("skipping: cannot start a PostgreSQL cluster of the test's own: {why}");
            None
        }
    }
}

fn run_quiet(argv: &[String]) -> Result<(), String> {
    // A file, not a pipe: the server pg_ctl starts keeps its output open and would hold a pipe
    // (and this call) until it stops.
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let file = log.reopen().map_err(|e| e.to_string())?;
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(file)
        .status()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!(
            "{} failed: {}",
            argv.join(" "),
            std::fs::read_to_string(log.path()).unwrap_or_default()
        )),
    }
}
