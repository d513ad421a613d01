//! How subjects other than bash commands are judged: URLs on their parsed parts (issue 12 §4),
//! paths where they lead as well as where they are written (issue 12 §5, issue 17 §4), and the
//! files a walk leaves out.

use std::sync::Arc;

use globset::GlobBuilder;
use pretty_assertions::assert_eq;

use super::*;

fn denied(d: Decision) -> String {
    match d {
        Decision::Denied(why) => why,
        Decision::Allowed => "allowed".to_owned(),
    }
}

fn url(s: &str) -> Subject {
    Subject::Url(s.into())
}

fn located(path: &str, real: Option<&str>) -> Subject {
    Subject::Located {
        path: path.into(),
        real: real.map(str::to_owned),
    }
}

const WEB: &[&str] = &[
    "web_fetch",
    "read_file",
    "list_dir",
    "grep",
    "glob",
    "line_count",
];

fn web_policy(allow: &[&str], deny: &[&str]) -> Policy {
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Policy::new(&s(allow), &s(deny), WEB).unwrap()
}

/// Issue 12 §4: URL patterns are matched on the parsed URL. Each row: a pattern, a URL,
/// whether the pattern covers it, and whether matching the text (as before) said it did; the
/// rows where the two differ are the bypasses.
#[test]
fn url_patterns_match_the_parts_of_the_parsed_url() {
    let table: &[(&str, &str, bool, bool)] = &[
        (
            "http://*.example.com/*",
            "http://a.example.com/x",
            true,
            true,
        ),
        (
            "http://*.example.com/*",
            "http://a.b.example.com/x/y?z=1",
            true,
            true,
        ),
        (
            "http://*.example.com/*",
            "http://A.Example.COM/x",
            true,
            false,
        ),
        (
            "http://*.example.com/*",
            "http://localhost:18080/x.example.com/y",
            false,
            true,
        ),
        (
            "http://*.example.com/*",
            "http://localhost/?q=.example.com/",
            false,
            true,
        ),
        (
            "http://*.example.com/*",
            "http://localhost/#.example.com/",
            false,
            true,
        ),
        (
            "http://*.example.com/*",
            "http://example.com.evil.org/x",
            false,
            false,
        ),
        (
            "http://*.example.com/*",
            "http://example.com/x",
            false,
            false,
        ),
        (
            "http://*.example.com/*",
            "http://a.example.com:8080/x",
            false,
            false,
        ),
        (
            "http://*.example.com*",
            "http://a.example.com@localhost/",
            false,
            true,
        ),
        (
            "https://docs.rs/*",
            "https://docs.rs/serde/latest/serde/",
            true,
            true,
        ),
        ("https://docs.rs/*", "https://docs.rs", true, false),
        ("https://docs.rs/*", "https://docs.rs:443/x", true, false),
        ("https://docs.rs/*", "https://docs.rs:8443/x", false, false),
        ("https://docs.rs/*", "http://docs.rs/x", false, false),
        ("https://docs.rs*", "https://docs.rs@evil.org/", false, true),
        ("https://docs.rs*", "https://docs.rs.evil.org/", true, true),
        (
            "https://docs.rs/*",
            "https://docs.rs.evil.org/",
            false,
            false,
        ),
        (
            "https://docs.rs/serde/*",
            "https://docs.rs/serde/../tokio",
            false,
            true,
        ),
        (
            "https://docs.rs/serde/*",
            "https://docs.rs/serde/%2e%2E/tokio",
            false,
            true,
        ),
        (
            "https://docs.rs/serde/*",
            "https://docs.rs/serde/x/../y",
            true,
            true,
        ),
        ("https://docs.rs", "https://docs.rs/", true, false),
        ("https://docs.rs", "https://docs.rs/x", false, false),
        ("http*://docs.rs/*", "http://docs.rs/x", true, true),
        (
            "http://localhost:*/*",
            "http://localhost:18080/x",
            true,
            true,
        ),
        ("http://localhost:*/*", "http://localhost/x", true, false),
        ("http://127.0.0.1:80/*", "http://127.0.0.1/x", true, false),
        ("http://[::1]:8080/*", "http://[::1]:8080/x", true, false),
        ("http://[::1]:8080/*", "http://[::2]:8080/x", false, false),
        ("http://*/*", "http://anything/at/all", true, true),
        ("http://*/*", "not a url", false, false),
        ("https://*@docs.rs/*", "https://u:p@docs.rs/x", true, true),
        (
            "ssh://git@github.com/*",
            "ssh://git@github.com/a/b.git",
            true,
            true,
        ),
        (
            "ssh://git@github.com/*",
            "ssh://evil@github.com/a",
            false,
            false,
        ),
        (
            "ssh://git@github.com*",
            "ssh://git@github.com@evil.org/a",
            false,
            true,
        ),
        // A pattern not written as a URL keeps matching the text.
        ("*docs.rs*", "https://docs.rs/x", true, true),
    ];
    let any = web_policy(&["none,web_fetch"], &[]);
    for (pattern, subject, covered, as_text) in table {
        let p = web_policy(&[&format!("none,web_fetch({pattern})")], &[]);
        let got = p.permits("web_fetch", Some(&url(subject))) == Decision::Allowed;
        assert_eq!(got, *covered, "{pattern} {subject}");
        let text = GlobBuilder::new(pattern).build().unwrap().compile_matcher();
        assert_eq!(
            text.is_match(subject),
            *as_text,
            "as text: {pattern} {subject}"
        );
        // CONTROL: the pattern-less rule allows the same URL.
        assert_eq!(
            any.permits("web_fetch", Some(&url(subject))),
            Decision::Allowed
        );
    }
    let p = web_policy(&["none,web_fetch(http://*.example.com/*)"], &[]);
    assert_eq!(
        denied(p.permits("web_fetch", Some(&url("http://localhost/x.example.com/")))),
        "\"http://localhost/x.example.com/\" is not allowed: web_fetch is only allowed as \
         web_fetch(http://*.example.com/*)"
    );
}

/// A URL that does not parse cannot be judged: no allow rule covers it, and every deny rule
/// written as a URL pattern for the tool denies it.
#[test]
fn an_unparseable_url_fails_closed() {
    let allow = web_policy(&["none,web_fetch(https://*/*)"], &[]);
    let deny = web_policy(&["none,web_fetch"], &["web_fetch(https://evil.org/*)"]);
    for bad in ["https://[oops/", "https://exa mple.com:99999/", "http://"] {
        assert!(
            matches!(
                allow.permits("web_fetch", Some(&url(bad))),
                Decision::Denied(_)
            ),
            "{bad}"
        );
        assert_eq!(
            denied(deny.permits("web_fetch", Some(&url(bad)))),
            "denied by the rule --deny web_fetch(https://evil.org/*)",
            "{bad}"
        );
    }
    // A deny URL pattern still lets other URLs through, and catches its own host however
    // it is spelled.
    let ok = "https://docs.rs/x";
    assert_eq!(deny.permits("web_fetch", Some(&url(ok))), Decision::Allowed);
    for evil in [
        "https://EVIL.org/a",
        "https://evil.org:443/a/../b",
        "https://u@evil.org/",
    ] {
        assert!(
            matches!(
                deny.permits("web_fetch", Some(&url(evil))),
                Decision::Denied(_)
            ),
            "{evil}"
        );
    }
    // Text that is no URL is simply not matched by a URL pattern.
    let text = Subject::Text("rust async".into());
    assert_eq!(deny.permits("web_fetch", Some(&text)), Decision::Allowed);
}

#[test]
fn url_patterns_that_cannot_be_matched_reliably_are_rule_errors() {
    for bad in [
        "web_fetch(https:///x)",
        "web_fetch(https://docs.rs:/x)",
        "web_fetch(http://[::1/x)",
    ] {
        let err = Policy::new(&["none".into(), bad.into()], &[], WEB).unwrap_err();
        assert!(matches!(err, PolicyError::Syntax { .. }), "{bad}: {err}");
    }
}

/// Issue 12 §5: a path is judged where it is written and where it leads. Each row: the rules,
/// the path, where it leads, and the decision (the written path alone was allowed in each).
#[test]
fn a_path_must_be_allowed_where_it_leads_too() {
    // allow, deny, the path as written, where it leads, and why it is denied.
    type Row<'a> = (
        &'a [&'a str],
        &'a [&'a str],
        &'a str,
        Option<&'a str>,
        &'a str,
    );
    let table: &[Row] = &[
        (
            &["none,read_file(src/**)"],
            &[],
            "src/docs/key",
            Some("secrets/key"),
            "\"src/docs/key\" leads to \"secrets/key\" (a symlink), which is not allowed: \
             read_file is only allowed as read_file(src/**)",
        ),
        (
            &[],
            &["read_file(.env)"],
            "settings",
            Some(".env"),
            "\"settings\" leads to \".env\", which the rule --deny read_file(.env) denies",
        ),
        (
            &["none,line_count(src/**)"],
            &[],
            "src/../../../../../etc",
            None,
            "\"src/../../../../../etc\" leads outside the workspace, which no pattern covers: \
             line_count is only allowed as line_count(src/**)",
        ),
        (
            &["none,line_count(**)"],
            &[],
            "src/out",
            None,
            "\"src/out\" leads outside the workspace, which no pattern covers: line_count is \
             only allowed as line_count(**)",
        ),
    ];
    for (allow, deny, path, real, why) in table {
        let p = web_policy(allow, deny);
        let tool = if path.starts_with("src/.") || *path == "src/out" {
            "line_count"
        } else {
            "read_file"
        };
        assert_eq!(
            denied(p.permits(tool, Some(&located(path, *real)))),
            *why,
            "{path}"
        );
        // CONTROL: as written alone, the path was allowed.
        assert_eq!(
            p.permits(tool, Some(&Subject::Path(path.to_string()))),
            Decision::Allowed
        );
    }
    // Both views allowed, by the same rule or by two.
    let p = web_policy(&["none,read_file(src/**),read_file(secrets/**)"], &[]);
    let s = located("src/docs/key", Some("secrets/key"));
    assert_eq!(p.permits("read_file", Some(&s)), Decision::Allowed);
    let s = located("src/alias.rs", Some("src/main.rs"));
    assert_eq!(
        web_policy(&["none,read_file(src/**)"], &[]).permits("read_file", Some(&s)),
        Decision::Allowed
    );
    // A deny rule on the name as written still holds when the link leads somewhere allowed.
    let p = web_policy(&[], &["read_file(settings)"]);
    assert_eq!(
        denied(p.permits("read_file", Some(&located("settings", Some(".env"))))),
        "denied by the rule --deny read_file(settings)"
    );
    // Leading outside is left to a rule without a pattern (the tool answers for it).
    let p = web_policy(&["none,line_count"], &[]);
    assert_eq!(
        p.permits("line_count", Some(&located("../x", None))),
        Decision::Allowed
    );
}

#[test]
fn walks_hide_what_a_read_file_or_own_deny_rule_covers() {
    let p = web_policy(
        &["grep,glob"],
        &["read_file(.env),grep(secrets/**),read_file"],
    );
    assert_eq!(p.hides("grep", ".env"), Some("read_file(.env)"));
    assert_eq!(p.hides("glob", ".env"), Some("read_file(.env)"));
    assert_eq!(p.hides("grep", "secrets/key"), Some("grep(secrets/**)"));
    assert_eq!(p.hides("glob", "secrets/key"), None);
    // A pattern-less deny hides the tool, not every file from other tools.
    assert_eq!(p.hides("grep", "src/main.rs"), None);
    let gate = Gate::new(Arc::new(p), "grep");
    assert_eq!(gate.hides(".env").as_deref(), Some("read_file(.env)"));
    assert_eq!(Gate::open().hides(".env"), None);
    assert_eq!(Gate::open().permits(&url("http://x/")), Decision::Allowed);
}
