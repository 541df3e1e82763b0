//! Everything a live run changes, recorded before it is changed, and undone in reverse order:
//! knob writes, zram devices, file systems on them, swap areas, cgroups, the run's scratch
//! directory, tmpfs mounts and the files on them, tracefs and its instances. `cleanup` is the
//! explicit path (it reports what it could not undo); dropping a session that was not cleaned up
//! (an early return, a panic) cleans up too.

use std::path::{Path, PathBuf};

use super::cgroup::Hierarchy;
use super::knobs::Change;
use super::sys::{knob_value, read, same_knob_value, write};
use super::zram::{self, Zram};

enum Undo {
    Knob(Change),
    /// Reset and, if added, remove the device.
    Zram(Zram),
    /// Unmount and remove the mount point.
    Mount(PathBuf),
    /// swapoff of a device or file.
    Swapon(String),
    Cgroup(Hierarchy, PathBuf),
    Dir(PathBuf),
    /// A file the run created (on one of its tmpfs mounts).
    File(PathBuf),
    /// A tracefs instance (rmdir removes it with its buffers).
    TraceInstance(PathBuf),
    /// tracefs mounted on its own directory, which stays.
    TraceFs(PathBuf),
}

#[derive(Default)]
pub struct Session {
    undo: Vec<Undo>,
}

impl Session {
    pub fn new() -> Session {
        Session::default()
    }

    /// Writes a knob; its old value is recorded first, so even a failed write is put back.
    pub fn set_knob(&mut self, change: &Change) -> Result<(), String> {
        self.undo.push(Undo::Knob(change.clone()));
        write(&change.path, &change.value)
    }

    /// A zram device of `size_bytes`, swapped on; returns it and its compression algorithm.
    pub fn add_zram_swap(
        &mut self,
        size_bytes: u64,
        priority: i32,
        discard: bool,
    ) -> Result<(Zram, String), String> {
        let (z, algorithm) = self.add_zram_device(size_bytes)?;
        self.undo
            .push(Undo::Swapon(z.dev().to_string_lossy().into_owned()));
        zram::swapon_device(&z, priority, discard)?;
        Ok((z, algorithm))
    }

    /// A zram device of `size_bytes`, not swapped on (calibrate writes to one directly); returns
    /// it and its compression algorithm.
    pub fn add_zram_device(&mut self, size_bytes: u64) -> Result<(Zram, String), String> {
        let z = zram::take()?;
        self.undo.push(Undo::Zram(z.clone()));
        let algorithm = zram::configure(&z, size_bytes)?;
        Ok((z, algorithm))
    }

    /// A swap file of `size_bytes` on ext4 on a new zram device, mounted on `dir`; returns the
    /// device, its compression algorithm and the file.
    pub fn add_zram_swap_file(
        &mut self,
        size_bytes: u64,
        priority: i32,
        dir: &Path,
    ) -> Result<(Zram, String, PathBuf), String> {
        let z = zram::take()?;
        self.undo.push(Undo::Zram(z.clone()));
        // room for ext4's metadata beside the file
        let algorithm = zram::configure(&z, size_bytes + size_bytes / 16 + (64 << 20))?;
        std::fs::create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.undo.push(Undo::Mount(dir.to_path_buf()));
        zram::mount_ext4(&z, dir)?;
        let file = dir.join("swapfile");
        zram::make_swap_file(&file, size_bytes)?;
        let path = file.to_string_lossy().into_owned();
        self.undo.push(Undo::Swapon(path.clone()));
        zram::swapon(&path, priority, false)?;
        Ok((z, algorithm, file))
    }

    /// A cgroup with a memory limit (None = none).
    pub fn add_cgroup(
        &mut self,
        hierarchy: &Hierarchy,
        name: &str,
        limit_bytes: Option<u64>,
        swappiness: u32,
        zswap: &super::cgroup::ZswapLimits,
    ) -> Result<PathBuf, String> {
        let dir = hierarchy.make(name)?;
        self.undo.push(Undo::Cgroup(hierarchy.clone(), dir.clone()));
        hierarchy.configure(&dir, limit_bytes, swappiness, zswap)?;
        Ok(dir)
    }

    /// A scratch directory for the programs' operation files.
    pub fn add_dir(&mut self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.undo.push(Undo::Dir(dir.to_path_buf()));
        Ok(())
    }

    /// tracefs mounted on `dir` (/sys/kernel/tracing), for the run only.
    pub fn mount_tracefs(&mut self, dir: &Path) -> Result<(), String> {
        // recorded once mounted: a mount that failed leaves nothing to undo
        zram::run("mount", &["-t", "tracefs", "nodev", &dir.to_string_lossy()])?;
        self.undo.push(Undo::TraceFs(dir.to_path_buf()));
        Ok(())
    }

    /// A tracefs instance: a directory of tracefs's `instances`.
    pub fn add_trace_instance(&mut self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.undo.push(Undo::TraceInstance(dir.to_path_buf()));
        Ok(())
    }

    /// A tmpfs mounted on a new directory, with its files created as holes.
    pub fn add_tmpfs(&mut self, mount: &super::tmpfs::Mount) -> Result<(), String> {
        std::fs::create_dir(&mount.dir)
            .map_err(|e| format!("cannot create {}: {e}", mount.dir.display()))?;
        self.undo.push(Undo::Mount(mount.dir.clone()));
        zram::run(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                &mount.options(),
                "nodev",
                &mount.dir.to_string_lossy(),
            ],
        )?;
        for (_, path, size_bytes) in &mount.files {
            self.undo.push(Undo::File(path.clone()));
            super::tmpfs::create_hole(path, *size_bytes)?;
        }
        Ok(())
    }

    /// Undoes everything, newest first, carrying on past failures; returns what could not be
    /// undone. Restored knobs are read back.
    pub fn cleanup(&mut self) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        while let Some(undo) = self.undo.pop() {
            let result = match &undo {
                Undo::Knob(c) => restore_knob(c),
                Undo::Zram(z) => zram::release(z),
                Undo::Mount(dir) => zram::unmount(dir),
                Undo::Swapon(path) => zram::swapoff(path),
                Undo::Cgroup(h, dir) => h.remove(dir),
                Undo::Dir(dir) => match std::fs::remove_dir_all(dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(format!("cannot remove {}: {e}", dir.display()))
                    }
                    _ => Ok(()),
                },
                Undo::TraceFs(dir) => zram::run("umount", &[&dir.to_string_lossy()]),
                Undo::TraceInstance(dir) => std::fs::remove_dir(dir)
                    .map_err(|e| format!("cannot remove {}: {e}", dir.display())),
                Undo::File(path) => match std::fs::remove_file(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(format!("cannot remove {}: {e}", path.display()))
                    }
                    _ => Ok(()),
                },
            };
            if let Err(e) = result {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

fn restore_knob(c: &Change) -> Result<(), String> {
    write(&c.path, &c.before)?;
    let now = read(&c.path).map(|t| knob_value(&t)).unwrap_or_default();
    if same_knob_value(&now, &c.before) {
        Ok(())
    } else {
        Err(format!(
            "{} reads {now:?} after restoring {:?}",
            c.path, c.before
        ))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(errors) = self.cleanup() {
            for e in errors {
                eprintln!("foliosim: cleanup: {e}");
            }
        }
    }
}
