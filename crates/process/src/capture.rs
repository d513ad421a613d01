//! Bounded capture of a stream of output: the first `head` bytes and the last `tail` bytes are
//! kept in memory, the total is counted, and once the output outgrows the two, everything is
//! also streamed to a spill file, so memory stays bounded however much a command prints and the
//! whole output is still on disk — up to the spill file's own cap, since `yes` for a minute would
//! otherwise fill the disk. The spill file's redactor takes the run's secrets out as output
//! arrives, so everything after (memory, file, counts) is of the redacted output.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use crate::redact::{self, Redactor};

/// A file to save a whole output in (its name in a directory rounds holds open), and the most
/// bytes it may hold.
#[derive(Debug, Clone)]
pub struct SpillFile {
    pub dir: crate::files::Dir,
    pub name: String,
    pub max: u64,
    /// The run's secrets, taken out of the output as it arrives: before it is kept in memory
    /// or written to the file, so neither holds one, nor a part of one cut at the head.
    pub redact: Redactor,
}

impl SpillFile {
    /// The spill file at `path`, its directory opened (and made) now.
    #[cfg(any(test, feature = "test-support"))]
    pub fn at(path: &std::path::Path, max: u64) -> std::io::Result<SpillFile> {
        let target = crate::files::Target::new(path)?;
        Ok(SpillFile {
            dir: target.dir().clone(),
            name: target.name().to_string_lossy().into_owned(),
            max,
            redact: Redactor::default(),
        })
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }
}

/// Where to keep output that does not fit.
#[derive(Debug, Clone)]
pub struct Limits {
    pub head: usize,
    pub tail: usize,
    /// The file to spill to; `None` keeps only head and tail.
    pub spill: Option<SpillFile>,
}

#[derive(Debug)]
pub struct Capture {
    limits: Limits,
    /// Everything, while it still fits in head + tail.
    small: Vec<u8>,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    lines: u64,
    spill: Option<File>,
    spill_error: Option<String>,
    /// Bytes written to the spill file so far.
    spilled_bytes: u64,
    overflowed: bool,
    redact: Option<redact::Stream>,
}

/// A finished capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    pub head: Vec<u8>,
    /// Empty unless the output overflowed.
    pub(crate) tail: Vec<u8>,
    pub total: u64,
    /// Newlines in the whole output.
    pub(crate) lines: u64,
    pub overflowed: bool,
    pub spilled: Option<PathBuf>,
    /// The spill file stopped at its cap: it holds only the start of the output.
    pub(crate) spill_capped: bool,
    pub spill_error: Option<String>,
}

impl Capture {
    pub fn new(limits: Limits) -> Capture {
        Capture {
            small: Vec::new(),
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            lines: 0,
            spill: None,
            spill_error: None,
            spilled_bytes: 0,
            overflowed: false,
            redact: limits.spill.as_ref().and_then(|s| s.redact.stream()),
            limits,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        match self.redact.take() {
            None => self.keep(bytes),
            Some(mut stream) => {
                let mut out = Vec::with_capacity(bytes.len());
                stream.push(bytes, &mut out);
                self.keep(&out);
                self.redact = Some(stream);
            }
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        if !self.overflowed {
            self.small.extend_from_slice(bytes);
            if self.small.len() <= self.limits.head + self.limits.tail {
                return;
            }
            self.overflowed = true;
            let all = std::mem::take(&mut self.small);
            self.spill_write(&all);
            self.head = all[..self.limits.head].to_vec();
            self.keep_tail(&all[self.limits.head..]);
            return;
        }
        self.spill_write(bytes);
        self.keep_tail(bytes);
    }

    fn keep_tail(&mut self, bytes: &[u8]) {
        let keep = &bytes[bytes.len().saturating_sub(self.limits.tail)..];
        let excess = (self.tail.len() + keep.len()).saturating_sub(self.limits.tail);
        self.tail.drain(..excess);
        self.tail.extend(keep);
    }

    fn spill_write(&mut self, bytes: &[u8]) {
        if self.spill_error.is_some() {
            return;
        }
        let Some(spill) = &self.limits.spill else {
            return;
        };
        if self.spill.is_none() {
            // Private (it may hold file contents and secrets a command printed), and a symlink
            // planted in its place is not followed.
            match spill.dir.target(&spill.name).and_then(|t| t.create()) {
                Ok(f) => self.spill = Some(f),
                Err(e) => {
                    self.spill_error = Some(e.to_string());
                    return;
                }
            }
        }
        let room = spill.max.saturating_sub(self.spilled_bytes);
        let bytes = &bytes[..bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if bytes.is_empty() {
            return;
        }
        if let Some(f) = self.spill.as_mut() {
            match f.write_all(bytes) {
                Ok(()) => self.spilled_bytes += bytes.len() as u64,
                Err(e) => self.spill_error = Some(format!("{}: {e}", spill.path().display())),
            }
        }
    }

    pub fn finish(mut self) -> Captured {
        if let Some(mut stream) = self.redact.take() {
            let mut out = Vec::new();
            stream.finish(&mut out);
            self.keep(&out);
        }
        if let Some(f) = self.spill.as_mut()
            && let Err(e) = f.flush()
        {
            self.spill_error.get_or_insert_with(|| e.to_string());
        }
        let spilled = match (&self.spill, &self.spill_error) {
            (Some(_), None) => self.limits.spill.as_ref().map(SpillFile::path),
            _ => None,
        };
        let spill_capped = spilled.is_some() && self.spilled_bytes < self.total;
        let (head, tail) = if self.overflowed {
            (self.head, self.tail.into_iter().collect())
        } else {
            (self.small, Vec::new())
        };
        Captured {
            head,
            tail,
            total: self.total,
            lines: self.lines,
            overflowed: self.overflowed,
            spilled,
            spill_capped,
            spill_error: self.spill_error,
        }
    }
}

impl Captured {
    /// The text a model reads: all of it when it fit, else head, a marker saying what was cut and
    /// where the whole output is, and tail. Invalid UTF-8 becomes U+FFFD, so binary output can
    /// never break a JSON transcript.
    pub fn render(&self) -> String {
        if !self.overflowed {
            return String::from_utf8_lossy(&self.head).into_owned();
        }
        let head = utf8_prefix(&self.head);
        let tail = utf8_suffix(&self.tail);
        let cut = self.total - head.len() as u64 - tail.len() as u64;
        let cut_lines = self
            .lines
            .saturating_sub(memchr::memchr_iter(b'\n', head).count() as u64)
            .saturating_sub(memchr::memchr_iter(b'\n', tail).count() as u64);
        let whole = match (&self.spilled, &self.spill_error) {
            (Some(p), _) if self.spill_capped => format!(
                "; only its first bytes were saved, in {} (the spill file is capped by \
                 --max-spill-bytes)",
                p.display()
            ),
            (Some(p), _) => format!("; the whole output is in {}", p.display()),
            (None, Some(e)) => format!("; saving the whole output failed: {e}"),
            (None, None) => String::new(),
        };
        let lines = if cut_lines == 1 { "line" } else { "lines" };
        format!(
            "{}\n[... {cut} bytes ({cut_lines} {lines}) cut from the middle of {} bytes{whole} ...]\n{}",
            String::from_utf8_lossy(head).trim_end_matches('\n'),
            self.total,
            String::from_utf8_lossy(tail)
        )
    }
}

/// The longest prefix that does not end inside a UTF-8 character.
fn utf8_prefix(b: &[u8]) -> &[u8] {
    match std::str::from_utf8(b) {
        Ok(_) => b,
        Err(e) if e.error_len().is_none() => &b[..e.valid_up_to()],
        Err(_) => b,
    }
}

/// The longest suffix that does not start inside a UTF-8 character.
fn utf8_suffix(b: &[u8]) -> &[u8] {
    let skip = b
        .iter()
        .take(3)
        .take_while(|&&c| (c & 0xC0) == 0x80)
        .count();
    &b[skip..]
}

/// Caps text already in memory (any tool's result) the same way, spilling the whole to `spill`.
pub fn cap_text(text: &str, max: usize, spill: Option<SpillFile>) -> Captured {
    let mut c = Capture::new(Limits {
        head: max * 2 / 3,
        tail: max / 3,
        spill,
    });
    c.push(text.as_bytes());
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn limits(head: usize, tail: usize, spill: Option<PathBuf>) -> Limits {
        let spill = spill.map(|path| SpillFile::at(&path, u64::MAX).unwrap());
        Limits { head, tail, spill }
    }

    #[test]
    fn small_output_is_kept_whole_without_a_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("out.txt");
        let mut c = Capture::new(limits(8, 8, Some(spill.clone())));
        c.push(b"hello\n");
        c.push(b"world\n");
        let got = c.finish();
        assert_eq!(got.render(), "hello\nworld\n");
        assert_eq!((got.total, got.lines, got.overflowed), (12, 2, false));
        assert!(!spill.exists());
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_spills_everything() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("sub/out.txt");
        let mut c = Capture::new(limits(10, 10, Some(spill.clone())));
        let mut all = Vec::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            all.extend_from_slice(line.as_bytes());
            c.push(line.as_bytes());
        }
        let got = c.finish();
        assert_eq!(got.head, b"line 0\nlin");
        assert_eq!(got.tail, b"\nline 999\n");
        assert_eq!(got.total, all.len() as u64);
        assert_eq!(std::fs::read(&spill).unwrap(), all);
        let text = got.render();
        assert!(text.starts_with("line 0\nlin\n[... "), "{text}");
        assert!(
            text.contains(&format!("the whole output is in {}", spill.display())),
            "{text}"
        );
        assert!(text.ends_with("\nline 999\n"), "{text}");
    }

    #[test]
    fn memory_stays_bounded_whatever_the_write_sizes() {
        let mut c = Capture::new(limits(100, 100, None));
        for n in [1usize, 7, 4096, 65536, 3] {
            c.push(&vec![b'x'; n]);
            assert!(c.tail.len() <= 100 && c.head.len() <= 100 && c.small.len() <= 201);
        }
        assert_eq!(c.finish().total, 1 + 7 + 4096 + 65536 + 3);
    }

    #[test]
    fn binary_and_split_utf8_render_as_valid_text() {
        let mut c = Capture::new(limits(4, 4, None));
        c.push("ééé".as_bytes());
        c.push(b"\x00\xff\xfe");
        c.push("☔☔".as_bytes());
        let text = c.finish().render();
        assert!(text.starts_with("éé\n[... "), "{text}");
        assert!(text.ends_with("☔"), "{text}");
        assert_eq!(Capture::new(limits(9, 9, None)).finish().render(), "");
        let mut c = Capture::new(limits(9, 9, None));
        c.push(b"a\x00\xffb");
        assert_eq!(c.finish().render(), "a\u{0}\u{fffd}b");
    }

    #[test]
    fn an_unwritable_spill_file_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let mut c = Capture::new(limits(2, 2, Some(gone.join("out.txt"))));
        // Nothing can be made in a directory that was removed (even by root).
        std::fs::remove_dir(&gone).unwrap();
        c.push(b"0123456789");
        let got = c.finish();
        assert_eq!(got.spilled, None);
        assert!(
            got.render().contains("saving the whole output failed"),
            "{}",
            got.render()
        );
    }

    #[test]
    fn secrets_are_taken_out_before_memory_and_the_spill_file_see_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("call.stdout");
        let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let redact = Redactor::new([("GITHUB_TOKEN".to_owned(), secret.as_bytes().to_vec())]);
        let mut c = Capture::new(Limits {
            head: 100,
            tail: 100,
            spill: Some(SpillFile {
                redact,
                ..SpillFile::at(&path, u64::MAX).unwrap()
            }),
        });
        // The secret straddles the end of the head and arrives in pieces of 7 bytes.
        let printed = format!("{}{secret}\n{}\n{secret}", "x".repeat(90), "y".repeat(500));
        for piece in printed.as_bytes().chunks(7) {
            c.push(piece);
        }
        let got = c.finish();
        let spilled = std::fs::read_to_string(&path).unwrap();
        let text = got.render();
        for (what, seen) in [("spill", &spilled), ("render", &text)] {
            assert!(!seen.contains(&secret[..10]), "{what}: {seen}");
            assert!(!seen.contains(&secret[30..]), "{what}: {seen}");
        }
        assert_eq!(spilled, printed.replace(secret, "[REDACTED:GITHUB_TOKEN]"));
        assert!(text.ends_with("[REDACTED:GITHUB_TOKEN]"), "{text}");
        assert_eq!(got.total, spilled.len() as u64);
    }

    #[test]
    fn the_spill_file_stops_at_its_cap_and_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/call.stdout");
        let spill = SpillFile::at(&path, 1000).unwrap();
        let mut c = Capture::new(Limits {
            head: 10,
            tail: 10,
            spill: Some(spill),
        });
        for _ in 0..100 {
            c.push(&[b'y'; 64]);
        }
        let got = c.finish();
        assert_eq!(got.total, 6400, "the count is of everything printed");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1000);
        assert!(got.spill_capped);
        let text = got.render();
        assert!(text.contains("only its first bytes were saved"), "{text}");
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }
}
