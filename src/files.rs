//! Files rounds writes for itself (transcripts, exports, whole outputs of cut results): they
//! hold prompts, stdin and file contents, so only their owner may read them, and a symlink
//! planted where one is to be created is refused rather than followed to truncate its target.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Creates (or truncates) `path` for writing, mode 0600, making missing parent directories with
/// mode 0700. A symlink at `path` itself is an error, not followed.
pub fn create_private(path: &Path) -> io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a symbolic link; rounds does not write through one",
                )
            } else {
                e
            }
        })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    #[test]
    fn files_are_private_and_planted_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/t.jsonl");
        create_private(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("a/b")), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);

        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let planted = dir.path().join("planted.jsonl");
        symlink(&victim, &planted).unwrap();
        let err = create_private(&planted).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // The control: following the link is what would have truncated the victim.
        File::create(&planted).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "");
    }
}
