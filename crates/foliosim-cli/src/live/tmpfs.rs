//! The tmpfs files of a live run: one tmpfs mounted per distinct `huge=` option the scenario's
//! `[[file]]`s with `fs = "tmpfs"` name, under the run's scratch directory, and each file
//! created there at the scenario's size as a hole (ftruncate, as the simulator starts it), for
//! the ops player to map, read, write and fsync. The session records each mount and file before
//! it is made; cleanup removes the files and unmounts, before the swap devices go (a tmpfs page
//! that was swapped out holds a swap entry: swapoff would read it back in) and before the cgroups
//! are removed (the pages stay charged to the memcg that wrote them).
//!
//! Files on the disk (`fs` absent) are not played live: this runner has no disk file system of
//! its own to put them on, and a file there would meet whatever the host's page cache holds.

use std::path::{Path, PathBuf};

use foliosim::scenario::knobs::ShmemHuge;
use foliosim::scenario::FileSpec;

/// Room a tmpfs gets beyond the sizes of its files: with huge pages, the folio that covers the
/// end of a file may reach past it (a PMD, 2 MiB), and the mount's `size=` counts those pages.
const SLACK_PER_FILE_BYTES: u64 = 4 << 20;

/// One tmpfs mount of a run and the files on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub huge: ShmemHuge,
    pub dir: PathBuf,
    /// The mount's `size=` limit.
    pub size_bytes: u64,
    /// (file id: its index in the scenario's `[[file]]` list, path, size).
    pub files: Vec<(usize, PathBuf, u64)>,
}

impl Mount {
    /// The `-o` options of `mount -t tmpfs`.
    pub fn options(&self) -> String {
        format!(
            "huge={},size={},mode=0755",
            self.huge.name(),
            self.size_bytes
        )
    }
}

/// Where file `spec` lives in a run whose scratch directory is `scratch`; None for a file on the
/// disk. The name is prefixed so that no scenario name (".", "..") is a directory's.
pub fn file_path(scratch: &Path, spec: &FileSpec) -> Option<PathBuf> {
    let huge = spec.tmpfs?;
    Some(mount_dir(scratch, huge).join(format!("file-{}", spec.name)))
}

fn mount_dir(scratch: &Path, huge: ShmemHuge) -> PathBuf {
    scratch.join(format!("tmpfs-{}", huge.name()))
}

/// The mounts a run needs, one per distinct `huge=` option, in the order the files first name
/// them, each with its files.
pub fn plan(files: &[FileSpec], scratch: &Path) -> Vec<Mount> {
    let mut mounts: Vec<Mount> = Vec::new();
    for (id, spec) in files.iter().enumerate() {
        let (Some(huge), Some(path)) = (spec.tmpfs, file_path(scratch, spec)) else {
            continue;
        };
        let at = match mounts.iter().position(|m| m.huge == huge) {
            Some(at) => at,
            None => {
                mounts.push(Mount {
                    huge,
                    dir: mount_dir(scratch, huge),
                    size_bytes: 0,
                    files: Vec::new(),
                });
                mounts.len() - 1
            }
        };
        let m = &mut mounts[at];
        m.size_bytes += spec.size_bytes.div_ceil(4096) * 4096 + SLACK_PER_FILE_BYTES;
        m.files.push((id, path, spec.size_bytes));
    }
    mounts
}

/// Creates a file of `size_bytes` that is all hole, readable and writable by anyone (the
/// programs may run under another user one day; the mount point is 0755 under the scratch
/// directory).
pub fn create_hole(path: &Path, size_bytes: u64) -> Result<(), String> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.set_len(size_bytes)
        .map_err(|e| format!("cannot truncate {}: {e}", path.display()))?;
    // the mode at creation is filtered by the umask
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("cannot chmod {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, size_bytes: u64, tmpfs: Option<ShmemHuge>) -> FileSpec {
        FileSpec {
            name: name.into(),
            size_bytes,
            read_ahead_kb: 128,
            large_folios: true,
            tmpfs,
        }
    }

    #[test]
    fn one_mount_per_huge_option_with_its_files_and_room_for_them() {
        let files = [
            file("a", 1 << 30, Some(ShmemHuge::Never)),
            file("disk", 1 << 20, None),
            file("b", 4097, Some(ShmemHuge::Always)),
            file("c", 8192, Some(ShmemHuge::Never)),
        ];
        let mounts = plan(&files, Path::new("/tmp/run"));
        assert_eq!(mounts.len(), 2);
        assert_eq!(mounts[0].huge, ShmemHuge::Never);
        assert_eq!(mounts[0].dir, Path::new("/tmp/run/tmpfs-never"));
        // the file ids are the scenario's indices: the disk file keeps id 1 and is not mounted
        assert_eq!(
            mounts[0].files,
            vec![
                (0, PathBuf::from("/tmp/run/tmpfs-never/file-a"), 1 << 30),
                (3, PathBuf::from("/tmp/run/tmpfs-never/file-c"), 8192),
            ]
        );
        assert_eq!(
            mounts[0].size_bytes,
            (1 << 30) + 8192 + 2 * SLACK_PER_FILE_BYTES
        );
        // a partial last page counts whole
        assert_eq!(mounts[1].size_bytes, 8192 + SLACK_PER_FILE_BYTES);
        assert_eq!(
            mounts[1].options(),
            format!("huge=always,size={},mode=0755", 8192 + SLACK_PER_FILE_BYTES)
        );
        assert_eq!(file_path(Path::new("/s"), &files[1]), None);
        assert!(plan(&files[1..2], Path::new("/s")).is_empty());
    }

    #[test]
    fn a_dot_named_file_stays_inside_its_mount() {
        let f = file("..", 4096, Some(ShmemHuge::WithinSize));
        assert_eq!(
            file_path(Path::new("/s"), &f).unwrap(),
            Path::new("/s/tmpfs-within_size/file-..")
        );
    }

    #[test]
    fn a_hole_has_the_size_and_no_blocks() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = std::env::temp_dir().join(format!("foliosim-tmpfs-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hole");
        create_hole(&path, 64 << 20).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), 64 << 20);
        // a hole allocates nothing, whatever the file system (a few blocks at most)
        assert!(meta.blocks() * 512 < 1 << 20, "{} blocks", meta.blocks());
        assert_eq!(meta.permissions().mode() & 0o777, 0o666);
        // it is never made over an existing file
        assert!(create_hole(&path, 4096).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
