//! The action's release install (`install: release`, the default): scripts/action-install.sh
//! run as GitHub runs the action's steps, against a release host on loopback serving real
//! archives and their SHA256SUMS.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::action::{stub_calls, stubs, system_path};
use super::workflows::{Job, ROOT};
use crate::common::mock::{MockServer, Reply, Step};
use crate::common::{Sandbox, run};

/// The version the action's ref must be the tag of: Cargo.toml's, as cargo read it (the script
/// reads the same file itself).
const VERSION: &str = env!("CARGO_PKG_VERSION");
const GNU_X64: &str = "x86_64-unknown-linux-gnu";
const SCRIPT_CALL: &str = "\"$ACTION_PATH/scripts/action-install.sh\"";

/// The archive's name for `target`, as scripts/dist.sh names it.
fn asset(target: &str) -> String {
    format!("rounds-{VERSION}-{target}.tar.gz")
}

/// A release archive laid out as dist.sh lays it out: one top directory holding `rounds`
/// (here the script `exe`) and the README.
fn tarball(target: &str, exe: &str) -> Vec<u8> {
    let build = tempfile::tempdir().unwrap();
    let top = format!("rounds-{VERSION}-{target}");
    let dir = build.path().join(&top);
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "# rounds\n").unwrap();
    std::fs::write(dir.join("rounds"), exe).unwrap();
    std::fs::set_permissions(
        dir.join("rounds"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = build.path().join("out.tar.gz");
    let tar = run(Command::new("tar")
        .arg("-czf")
        .arg(&out)
        .arg("-C")
        .arg(build.path())
        .arg(&top));
    assert_eq!(tar.code, 0, "{}", tar.stderr);
    std::fs::read(out).unwrap()
}

/// The genuine archive's `rounds`: the binary under test.
fn genuine() -> String {
    format!(
        "#!/bin/sh\nexec '{}' \"$@\"\n",
        env!("CARGO_BIN_EXE_rounds")
    )
}

/// A swapped archive's `rounds`: it passes for the version, and leaves `marker` when it runs.
fn swapped(marker: &Path) -> String {
    format!(
        "#!/bin/sh\ntouch '{}'\necho 'rounds {VERSION}'\n",
        marker.display()
    )
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SHA256SUMS as dist.sh writes it: sha256sum's lines, sorted by name.
fn sums(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut files = files.to_vec();
    files.sort();
    let lines = files
        .iter()
        .map(|(name, b)| format!("{}  {name}\n", sha256(b)));
    lines.collect::<String>().into_bytes()
}

/// A release host on loopback: serves its directory's files by path, 404 for anything else,
/// and records the paths asked for.
struct Host {
    server: MockServer,
    root: PathBuf,
}

impl Host {
    fn start(sb: &Sandbox) -> Host {
        let root = sb.path("host");
        std::fs::create_dir_all(&root).unwrap();
        let files = root.clone();
        let server = MockServer::respond(move |r| {
            match std::fs::read(files.join(r.path.trim_start_matches('/'))) {
                Ok(bytes) => Reply {
                    status: 200,
                    headers: vec![],
                    body: vec![Step::Bytes(bytes)],
                },
                Err(_) => Reply::error(404, "Not Found"),
            }
        });
        Host { server, root }
    }

    fn put(&self, path: &str, bytes: &[u8]) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// Publishes release v{VERSION} under `at` with `archive` as the x86_64 glibc one, listed
    /// in SHA256SUMS as `listed` (the archive itself, unless a test swaps it), and a wheel.
    fn release(&self, at: &str, archive: &[u8], listed: &[u8]) {
        let name = asset(GNU_X64);
        self.put(&format!("{at}/{name}"), archive);
        let wheel = format!("rounds-{VERSION}-py3-none-manylinux_2_17_x86_64.whl");
        let listing = sums(&[(&name, listed), (&wheel, b"a wheel")]);
        self.put(&format!("{at}/SHA256SUMS"), &listing);
    }

    fn paths(&self) -> Vec<String> {
        self.server.requests().into_iter().map(|r| r.path).collect()
    }
}

/// A job using the action at `@REF` of o/r, its releases at ROUNDS_RELEASE_URL=`releases`.
fn release_job<'a>(sb: &'a Sandbox, releases: &str, at: &str) -> Job<'a> {
    let mut job = Job::new(sb, [vec![stubs(sb)], system_path()].concat());
    job.action_ref = at.to_owned();
    job.action_repository = "o/r".to_owned();
    job.env
        .push(("ROUNDS_RELEASE_URL".to_owned(), releases.to_owned()));
    job
}

/// The cargo install a build from source makes.
fn cargo_install(sb: &Sandbox) -> Vec<String> {
    let root = sb.path("runner/rounds-install").display().to_string();
    let words = [
        "cargo", "install", "--locked", "--path", ROOT, "--root", &root,
    ];
    words.map(str::to_owned).to_vec()
}

/// A step's edit for the controls: scripts/action-install.sh replaced by a copy of it where
/// `from` became `to`, to show what a check stops by taking the check out.
fn without(sb: &Sandbox, from: &str, to: &str) -> impl Fn(String) -> String {
    let text = std::fs::read_to_string(Path::new(ROOT).join("scripts/action-install.sh")).unwrap();
    assert!(text.contains(from), "{from}");
    let copy = sb.path("edited-install.sh");
    std::fs::write(&copy, text.replace(from, to)).unwrap();
    move |step: String| {
        assert!(step.contains(SCRIPT_CALL), "{step}");
        step.replace(SCRIPT_CALL, &format!("'{}'", copy.display()))
    }
}

/// The directories the release install extracted archives into.
fn extracted(sb: &Sandbox) -> usize {
    let dir = std::fs::read_dir(sb.path("runner/rounds-install"));
    dir.map(|d| {
        d.filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_str().unwrap().starts_with("release.")
        })
        .count()
    })
    .unwrap_or(0)
}

/// `rounds --version` as the job's later steps would find rounds.
fn version_on_path(job: &Job) -> String {
    let out = run(Command::new("rounds")
        .arg("--version")
        .env_clear()
        .env("PATH", job.search_path()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

#[test]
fn the_action_installs_the_release_of_its_version_once_checked_and_builds_nothing() {
    let sb = Sandbox::new();
    let host = Host::start(&sb);
    let at = format!("o/r/releases/download/v{VERSION}");
    let archive = tarball(GNU_X64, &genuine());
    host.release(&at, &archive, &archive);
    let mut job = Job::new(&sb, [vec![stubs(&sb)], system_path()].concat());
    job.action_ref = format!("v{VERSION}");
    job.action_repository = "o/r".to_owned();
    // No ROUNDS_RELEASE_URL: the release's address on the server, GitHub's being on loopback.
    job.env
        .push(("GITHUB_SERVER_URL".to_owned(), host.server.url()));

    // `install` at its default.
    let out = job.action("where", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("::"), "{}", out.stdout);
    assert_eq!(job.output("where", "mode"), "release");
    let key = format!("rounds-release-{VERSION}-Linux-X64-gnu");
    assert_eq!(job.output("where", "key"), key);
    let dir = sb.path("runner/rounds-install");
    let cached = dir.join("download");
    assert_eq!(
        job.output("where", "cache-path"),
        cached.display().to_string()
    );

    let out = job.action("install", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let name = asset(GNU_X64);
    assert_eq!(
        host.paths(),
        [format!("/{at}/SHA256SUMS"), format!("/{at}/{name}")]
    );
    assert_eq!(stub_calls(&sb), Vec::<Vec<String>>::new(), "nothing built");
    assert_eq!(job.github_path(), [dir.join("bin")]);
    assert_eq!(version_on_path(&job), format!("rounds {VERSION}\n"));
    let link = std::fs::read_link(dir.join("bin/rounds")).unwrap();
    let top = format!("rounds-{VERSION}-{GNU_X64}/rounds");
    assert!(link.starts_with(&dir) && link.ends_with(&top), "{link:?}");
    // What the cache keeps is the archive alone, as downloaded.
    let kept: Vec<_> = std::fs::read_dir(&cached)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(kept, [name.as_str()]);
    assert_eq!(std::fs::read(cached.join(&name)).unwrap(), archive);
}

#[test]
fn the_action_builds_from_source_when_its_version_has_no_release() {
    let sb = Sandbox::new();
    let host = Host::start(&sb);
    let url = host.server.url();
    let mut job = release_job(&sb, &url, &format!("v{VERSION}"));
    let out = job.action("where", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let notice = format!(
        "::notice title=rounds::{url}/v{VERSION} has no SHA256SUMS (no release for v{VERSION}, \
         or a draft); installing from source instead (cargo install)\n"
    );
    assert_eq!(out.stdout, notice);
    assert_eq!(job.output("where", "mode"), "source");
    assert!(job.output("where", "key").starts_with("rounds-Linux-X64-"));
    let dir = sb.path("runner/rounds-install");
    assert_eq!(job.output("where", "cache-path"), dir.display().to_string());
    let out = job.action("install", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(stub_calls(&sb), [cargo_install(&sb)]);
    assert_eq!(job.github_path(), [dir.join("bin")]);
    assert_eq!(host.paths(), [format!("/v{VERSION}/SHA256SUMS")]);
}

#[test]
fn the_action_builds_from_source_unless_its_ref_is_its_versions_tag_and_asks_nothing() {
    let tag = format!("v{VERSION}");
    let not_the_tag =
        |r: &str| format!("the action's ref {r} is not the tag of its version ({tag})");
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let cases = [
        ("", "no release for a local action (uses: ./)".to_owned()),
        ("main", not_the_tag("main")),
        ("v9.9.9", not_the_tag("v9.9.9")),
        (VERSION, not_the_tag(VERSION)),
        (sha, not_the_tag(sha)),
        (&format!("{tag}-rc.1"), not_the_tag(&format!("{tag}-rc.1"))),
    ];
    for (at, why) in cases {
        let sb = Sandbox::new();
        // A release the ref could be taken for: asking for it would succeed.
        let host = Host::start(&sb);
        let archive = tarball(GNU_X64, &genuine());
        host.release(&tag, &archive, &archive);
        let mut job = release_job(&sb, &host.server.url(), at);
        let out = job.action("where", &[]);
        assert_eq!(out.code, 0, "{at}: {}{}", out.stdout, out.stderr);
        let notice = format!("::notice title=rounds::{why}; installing from source instead");
        assert!(out.stdout.starts_with(&notice), "{at}: {}", out.stdout);
        assert_eq!(job.output("where", "mode"), "source", "{at}");
        assert_eq!(job.action("install", &[]).code, 0, "{at}");
        assert_eq!(stub_calls(&sb), [cargo_install(&sb)], "{at}");
        assert_eq!(host.paths(), Vec::<String>::new(), "{at}");
    }

    // The tag, but no repository to find its release in (and no ROUNDS_RELEASE_URL).
    let sb = Sandbox::new();
    let host = Host::start(&sb);
    let mut job = Job::new(&sb, [vec![stubs(&sb)], system_path()].concat());
    job.action_ref = tag.clone();
    job.env
        .push(("GITHUB_SERVER_URL".to_owned(), host.server.url()));
    let out = job.action("where", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let notice = "::notice title=rounds::the action's repository is unknown";
    assert!(out.stdout.starts_with(notice), "{}", out.stdout);
    assert_eq!(job.output("where", "mode"), "source");
    assert_eq!(host.paths(), Vec::<String>::new());
}

#[test]
fn the_action_takes_the_archive_for_its_runner_and_builds_where_the_release_has_none() {
    let sb = Sandbox::new();
    let host = Host::start(&sb);
    let tag = format!("v{VERSION}");
    let musl = "x86_64-unknown-linux-musl";
    let (gnu_archive, musl_archive) = (tarball(GNU_X64, &genuine()), tarball(musl, &genuine()));
    // A file named after the aarch64 archive is not that archive: the name must be exact.
    let signature = format!("{}.sig", asset("aarch64-unknown-linux-gnu"));
    let listing = sums(&[
        (&asset(GNU_X64), &gnu_archive),
        (&asset(musl), &musl_archive),
        (&signature, b"a signature"),
    ]);
    host.put(&format!("{tag}/SHA256SUMS"), &listing);
    let url = host.server.url();
    let sums_path = format!("/{tag}/SHA256SUMS");

    // An ARM64 runner: the release has no aarch64 archive.
    let mut job = release_job(&sb, &url, &tag);
    job.env.push(("RUNNER_ARCH".to_owned(), "ARM64".to_owned()));
    let out = job.action("where", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let missing = asset("aarch64-unknown-linux-gnu");
    let notice = format!("::notice title=rounds::the {tag} release has no {missing}; installing");
    assert!(out.stdout.starts_with(&notice), "{}", out.stdout);
    assert_eq!(job.output("where", "mode"), "source");
    assert_eq!(host.paths(), [sums_path.as_str()]);

    // macOS: no release is built for it, nothing is asked.
    job.env.push(("RUNNER_OS".to_owned(), "macOS".to_owned()));
    let out = job.action("where", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let notice = "::notice title=rounds::no release is built for macOS/ARM64 runners; installing";
    assert!(out.stdout.starts_with(notice), "{}", out.stdout);
    assert_eq!(job.output("where", "mode"), "source");
    assert_eq!(host.paths(), [sums_path.as_str()]);

    // A container job on Alpine (musl's ldd): the static build, cached apart from glibc's.
    let ldd = sb.path("alpine");
    std::fs::create_dir_all(&ldd).unwrap();
    std::fs::write(
        ldd.join("ldd"),
        "#!/bin/sh\necho 'musl libc (x86_64)' >&2\necho 'Version 1.2.5' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        ldd.join("ldd"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut job = Job::new(&sb, [vec![ldd], system_path()].concat());
    job.action_ref = tag.clone();
    job.action_repository = "o/r".to_owned();
    job.env.push(("ROUNDS_RELEASE_URL".to_owned(), url.clone()));
    let out = job.action("where", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(job.output("where", "mode"), "release", "{}", out.stdout);
    let key = format!("rounds-release-{VERSION}-Linux-X64-musl");
    assert_eq!(job.output("where", "key"), key);
    assert_eq!(
        job.output("where", "url"),
        format!("{url}/{tag}/{}", asset(musl))
    );
    assert_eq!(job.output("where", "sha256"), sha256(&musl_archive));
    // And glibc's ldd (this machine's): the glibc build.
    let mut job = release_job(&sb, &url, &tag);
    assert_eq!(job.action("where", &[]).code, 0);
    assert_eq!(job.output("where", "sha256"), sha256(&gnu_archive));
}

#[test]
fn the_action_runs_nothing_from_an_archive_that_does_not_match_its_checksum() {
    let sb = Sandbox::new();
    let host = Host::start(&sb);
    let tag = format!("v{VERSION}");
    let marker = sb.path("swapped-rounds-ran");
    let (good, bad) = (
        tarball(GNU_X64, &genuine()),
        tarball(GNU_X64, &swapped(&marker)),
    );
    host.release(&tag, &bad, &good);
    let mut job = release_job(&sb, &host.server.url(), &tag);
    assert_eq!(job.action("where", &[]).code, 0);
    assert_eq!(job.output("where", "mode"), "release");

    let out = job.action("install", &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let error = format!(
        "::error title=rounds::checksum mismatch for {} (download): expected {} (SHA256SUMS), \
         got {}; nothing from it was extracted or run\n",
        asset(GNU_X64),
        sha256(&good),
        sha256(&bad)
    );
    assert_eq!(out.stdout, error);
    assert_eq!(
        stub_calls(&sb),
        Vec::<Vec<String>>::new(),
        "no fallback to a build"
    );
    assert!(job.github_path().is_empty());
    assert!(!marker.exists());
    assert_eq!(extracted(&sb), 0);

    // The control: with the comparison taken out, the same archive is extracted, its rounds
    // runs (the version check) and joins PATH.
    let check = "if [ \"$actual\" != \"$ASSET_SHA256\" ]; then";
    let out = job.action_edited("install", &[], without(&sb, check, "if false; then"));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(marker.exists());
    assert_eq!(job.github_path(), [sb.path("runner/rounds-install/bin")]);
}

#[test]
fn a_cached_archive_is_checked_against_the_release_each_time_and_not_downloaded() {
    let sb = Sandbox::new();
    let host = Host::start(&sb);
    let tag = format!("v{VERSION}");
    let good = tarball(GNU_X64, &genuine());
    host.release(&tag, &good, &good);
    let mut job = release_job(&sb, &host.server.url(), &tag);
    let sums_path = format!("/{tag}/SHA256SUMS");

    // The cache step restored the archive: only SHA256SUMS is fetched.
    assert_eq!(job.action("where", &[]).code, 0);
    let cached = PathBuf::from(job.output("where", "cache-path")).join(asset(GNU_X64));
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    std::fs::write(&cached, &good).unwrap();
    let hit = HashMap::from([("cache-hit".to_owned(), "true".to_owned())]);
    job.outputs.insert("cache".to_owned(), hit);
    let out = job.action("install", &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(host.paths(), [sums_path.as_str()]);
    assert_eq!(version_on_path(&job), format!("rounds {VERSION}\n"));
    assert_eq!(stub_calls(&sb), Vec::<Vec<String>>::new());

    // Another workflow of the repository saved a swapped archive under the key: refused.
    let marker = sb.path("swapped-rounds-ran");
    let bad = tarball(GNU_X64, &swapped(&marker));
    std::fs::write(&cached, &bad).unwrap();
    assert_eq!(job.action("where", &[]).code, 0);
    let out = job.action("install", &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let error = format!(
        "::error title=rounds::checksum mismatch for {} (cache): expected {}",
        asset(GNU_X64),
        sha256(&good)
    );
    assert!(out.stdout.starts_with(&error), "{}", out.stdout);
    assert!(!marker.exists());
    assert_eq!(host.paths(), [sums_path.as_str(), sums_path.as_str()]);
    assert_eq!(extracted(&sb), 1, "only the genuine archive's");
    assert_eq!(job.github_path().len(), 1);
    assert_eq!(stub_calls(&sb), Vec::<Vec<String>>::new());
}

#[test]
fn the_action_fails_rather_than_guess_when_the_release_cannot_be_fetched() {
    let sb = Sandbox::new();
    let tag = format!("v{VERSION}");
    let where_fails = |job: &mut Job, releases: &str, error: &str| {
        job.env
            .push(("ROUNDS_RELEASE_URL".to_owned(), releases.to_owned()));
        let out = job.action("where", &[]);
        assert_eq!(out.code, 1, "{releases}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stdout
                .contains(&format!("::error title=rounds::{error}")),
            "{releases}: {}",
            out.stdout
        );
        assert_eq!(job.output("where", "mode"), "", "{releases}");
    };
    let mut job = release_job(&sb, "", &tag);

    // Plain http:// to anything but this machine is refused before a connection is made: here
    // 127.0.0.2 stands for a remote host (a loopback address all the same, so that a check
    // that let it through could be seen reaching it, and nothing leaves the machine).
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let remote = format!("http://{addr}");
    for releases in [
        remote.clone(),
        format!("http://localhost@{addr}"),
        format!("http://127.0.0.1@{addr}"),
        format!("ftp://{addr}"),
    ] {
        let refused = format!("refusing to download from {releases}/: only https://");
        where_fails(&mut job, &releases, &refused);
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The control: the same step, 127.0.0.2 allowed too, connects.
    job.env.push(("ROUNDS_RELEASE_URL".to_owned(), remote));
    let loopback = r"(127\.0\.0\.1|localhost)";
    let edit = without(&sb, loopback, r"(127\.0\.0\.[12]|localhost)");
    assert_eq!(job.action_edited("where", &[], edit).code, 1);
    assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) > 0);

    // A release host that fails even after curl's retries, refuses, or is not there at all:
    // an error, not a build from source that would hide it.
    let busy = MockServer::start(vec![Reply::error(503, "busy"); 4]);
    let error = format!("could not fetch {}/{tag}/SHA256SUMS (HTTP 503,", busy.url());
    where_fails(&mut job, &busy.url(), &error);
    assert_eq!(busy.requests().len(), 4, "the first try and 3 retries");
    let forbidden = MockServer::start(vec![Reply::error(403, "no")]);
    let error = format!(
        "could not fetch {}/{tag}/SHA256SUMS (HTTP 403,",
        forbidden.url()
    );
    where_fails(&mut job, &forbidden.url(), &error);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let error = format!("could not fetch {gone}/{tag}/SHA256SUMS (HTTP 000, 000: no response)");
    where_fails(&mut job, &gone, &error);
    assert_eq!(stub_calls(&sb), Vec::<Vec<String>>::new());
}

#[test]
fn the_action_refuses_a_release_whose_rounds_is_not_its_version() {
    let sb = Sandbox::new();
    let host = Host::start(&sb);
    let tag = format!("v{VERSION}");
    // Listed, so its checksum matches: a release built from other files.
    let other = tarball(GNU_X64, "#!/bin/sh\necho 'rounds 9.9.9'\n");
    host.release(&tag, &other, &other);
    let mut job = release_job(&sb, &host.server.url(), &tag);
    assert_eq!(job.action("where", &[]).code, 0);
    let out = job.action("install", &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let error = format!(
        "::error title=rounds::{}'s rounds says 'rounds 9.9.9', not 'rounds {VERSION}'\n",
        asset(GNU_X64)
    );
    assert_eq!(out.stdout, error);
    assert!(job.github_path().is_empty());
    assert_eq!(stub_calls(&sb), Vec::<Vec<String>>::new());
}
