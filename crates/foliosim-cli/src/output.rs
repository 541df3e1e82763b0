//! The `--json` document, written atomically: to a temporary file beside the target, renamed
//! into place only once everything has succeeded; and the check, before any run, that the
//! target is a place for a result.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

use foliosim::InputError;
// the document is built by the engine, which the Python package shares
pub use foliosim::stats::document::{array, document, document_of, run_json};

use crate::live::signal;
use crate::Failure;

/// Writes `text` and a trailing newline to a temporary file beside `path`, then renames it over
/// `path`. A failed write (ENOSPC) removes the temporary file and fails with status 1; SIGINT,
/// SIGTERM or SIGHUP during the write is held until the file is complete, then the temporary
/// file is removed and the command stops with 128 + the signal, leaving no result.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), Failure> {
    write_atomically_with(path, text, || {})
}

/// `write_atomically`, calling `before_rename` once the temporary file is written (tests send
/// a signal there).
fn write_atomically_with(
    path: &Path,
    text: &str,
    before_rename: impl FnOnce(),
) -> Result<(), Failure> {
    // checked again: a long run leaves time for the path to change
    check_output_path(path)?;
    let failed = |what: &str, e: &std::io::Error| Failure::Write {
        message: format!(
            "--json: {}: cannot {what} the result: {}; no result written",
            path.display(),
            io_error_text(e)
        ),
        status: 1,
    };
    let handlers = signal::Handlers::install();
    // dropped, the temporary file is removed: every early return below leaves nothing behind
    let mut temp = temp_file_beside(path).map_err(|e| failed("create a temporary file for", &e))?;
    temp.write_all(text.as_bytes())
        .and_then(|()| temp.write_all(b"\n"))
        // a full disk may only say so when the data reaches it
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| failed("write", &e))?;
    before_rename();
    if let Some(sig) = signal::pending() {
        drop(temp);
        return Err(Failure::Write {
            message: format!(
                "--json: {}: interrupted by {} while writing the result; no result written",
                path.display(),
                signal::name(sig)
            ),
            status: 128 + sig,
        });
    }
    temp.persist(path).map_err(|e| failed("rename", &e.error))?;
    drop(handlers);
    Ok(())
}

/// File systems whose files are the kernel's interfaces, never a place for a result (from
/// <linux/magic.h>). Checked by statfs(2), so that such a file system is recognised wherever
/// it is mounted, and by the canonical path (/proc, /sys), which also covers what is mounted
/// there under another type (a tmpfs at /sys/fs/cgroup).
const KERNEL_FILE_SYSTEMS: &[(u32, &str)] = &[
    (0x9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x0027_e0eb, "cgroupfs"),
    (0x6367_7270, "cgroup2fs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpffs"),
    (0x6265_6570, "configfs"),
    (0x1cd1, "devpts"),
    (0xde5e_81e4, "efivarfs"),
    (0x6165_676c, "pstorefs"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x6573_5543, "fusectl"),
    (0x9584_58f6, "hugetlbfs"),
];

/// What a result file is written in: the path's directory, `.` for a bare name.
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuses, before any run starts, an output path a result cannot safely replace: it must name
/// a regular file, or a new name in an existing directory this user can write to, outside the
/// kernel's file systems. Never a device (`/dev/null` would be replaced by a regular file), a
/// FIFO, a socket, a directory or an empty path.
/// A temporary file `NAME.XXXXXX.tmp` in the directory of `path`, to be renamed onto it once
/// complete (`persist`); dropped, it is removed. The umask applies to its 0666 mode, as it does
/// to a file created by a shell redirection.
pub fn temp_file_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    tempfile::Builder::new()
        .prefix(&name)
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(directory_of(path))
}

pub fn check_output_path(path: &Path) -> Result<(), InputError> {
    let refuse = |message: String| InputError {
        file: "--json".into(),
        key: path.display().to_string(),
        message,
    };
    const EXPECTED: &str = "expected a regular file or a new file name";
    if path.as_os_str().is_empty() {
        return Err(InputError {
            file: "--json".into(),
            key: String::new(),
            message: format!("{EXPECTED}, found an empty path"),
        });
    }
    if path.as_os_str().as_bytes().ends_with(b"/") || path.file_name().is_none() {
        return Err(refuse(format!("{EXPECTED}, found a directory path")));
    }
    let dir = directory_of(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(m) => {
            return Err(refuse(format!(
                "{EXPECTED} in an existing directory, found {} {}",
                dir.display(),
                kind_of(&m.file_type())
            )))
        }
        Err(e) => {
            return Err(refuse(format!(
                "{EXPECTED} in an existing directory, found {}: {}",
                dir.display(),
                io_error_text(&e)
            )))
        }
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(m) => {
            return Err(refuse(format!(
                "{EXPECTED}, found {}",
                kind_of(&m.file_type())
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(refuse(format!("{EXPECTED}, found {}", io_error_text(&e)))),
    }
    // by the path too: /sys/fs/cgroup may be a tmpfs holding the cgroup mounts
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if let Some(top) = ["/proc", "/sys"]
        .iter()
        .find(|top| canonical.starts_with(top))
    {
        return Err(refuse(format!(
            "{EXPECTED} outside {top}, found a path in {top} (the kernel's interface files)"
        )));
    }
    if let Ok(fs) = rustix::fs::statfs(dir) {
        // the magic numbers are 32 bits wide, whatever the width of the field
        let fs_type = fs.f_type as u32;
        if let Some((_, name)) = KERNEL_FILE_SYSTEMS.iter().find(|(t, _)| *t == fs_type) {
            return Err(refuse(format!(
                "{EXPECTED} on a disk or tmpfs file system, found {name} (the kernel's interface files)"
            )));
        }
    }
    // root passes the permission bits, but not a read-only mount (EROFS)
    if let Err(e) = rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    ) {
        return Err(refuse(format!(
            "expected a directory this user can write to, found {} {}",
            dir.display(),
            io_error_text(&std::io::Error::from(e))
        )));
    }
    Ok(())
}

/// "a directory", "a character device", ... for a refusal.
fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "neither a file nor a directory"
    }
}

pub fn io_error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        /// Sends a signal to the calling thread, delivered before it returns.
        fn raise(sig: i32) -> i32;
    }

    #[test]
    fn a_signal_during_the_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        let result = write_atomically_with(&path, "{}", || {
            // SAFETY: raise(3) takes a plain integer; the handlers installed note the signal
            assert_eq!(unsafe { raise(signal::SIGTERM) }, 0);
        });
        match result {
            Err(Failure::Write { message, status }) => {
                assert_eq!(status, 128 + signal::SIGTERM);
                assert!(message.contains("interrupted by SIGTERM"), "{message}");
            }
            _ => panic!("the write goes on after a signal"),
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "files left: {left:?}");
    }

    #[test]
    fn an_empty_path_is_refused() {
        let e = check_output_path(Path::new("")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--json: expected a regular file or a new file name, found an empty path"
        );
    }
}
