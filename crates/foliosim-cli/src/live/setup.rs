//! What a live run makes before its programs start: knob writes, zram swap devices (or swap
//! files on ext4 on zram), memory cgroups, a scratch directory and the tmpfs mounts and files
//! under it, each recorded in the session before it is made so that cleanup undoes it.

use std::path::PathBuf;

use foliosim::scenario::{RunSpec, SwapKind};
use serde_json::{json, Value};

use super::session::Session;
use super::{
    check_signal, kind_name, knobs, page_reporting, plays_with_swap_files, read_knob, sys, tmpfs,
    unsupported, zram, Host, LiveError,
};

/// What a run made before its programs start.
pub(super) struct Setup {
    pub(super) changes: Vec<knobs::Change>,
    /// (scenario name, device), and the notes on each.
    pub(super) devices: Vec<(String, zram::Zram)>,
    pub(super) swap_info: Vec<Value>,
    /// (scenario name, directory).
    pub(super) cgroups: Vec<(String, PathBuf)>,
    /// For tasks that name no cgroup.
    pub(super) default_group: Option<PathBuf>,
    pub(super) scratch: PathBuf,
    /// The tmpfs mounts and the notes on each.
    pub(super) tmpfs_info: Vec<Value>,
    /// Free page reporting held off for the run (a VM's balloon), if the kernel has it.
    pub(super) page_reporting: Option<page_reporting::Hold>,
    /// What the touch before the run did (None on a machine without a virtio balloon).
    pub(super) prefault: Option<Value>,
}

impl Setup {
    pub(super) fn group_of(&self, cgroup: &Option<String>) -> &PathBuf {
        match cgroup {
            Some(name) => self
                .cgroups
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, d)| d)
                .expect("a task's cgroup is one of the scenario's"),
            None => self
                .default_group
                .as_ref()
                .expect("made when a task has no cgroup"),
        }
    }
}

/// Free page reporting held off, knobs, the run's memory touched (a VM: see `page_reporting`;
/// while no swap device exists for the touch to push other processes' memory to), then swap devices and cgroups (made under the run's settings), then the scratch
/// directory and the tmpfs mounts in it (made last, so that cleanup unmounts them before swapoff
/// and before the cgroups go); each recorded in the session before it is made. Every change is printed on
/// stderr as it is made: the record to undo it by hand after a SIGKILL.
pub(super) fn set_up(
    host: &Host,
    spec: &RunSpec,
    serial: u32,
    session: &mut Session,
) -> Result<Setup, LiveError> {
    let failed = LiveError::Failed;
    let prefix = format!("foliosim-{}-{serial}", std::process::id());
    let changes = knobs::plan(&knobs::wanted(&spec.knobs), read_knob).map_err(unsupported)?;
    let held_off = page_reporting::hold_off_here(session);
    for change in &changes {
        check_signal()?;
        eprintln!("  {}: {} -> {}", change.path, change.before, change.value);
        session.set_knob(change).map_err(failed)?;
    }
    // after the knobs, so that the touch takes folios of the sizes the run will (a 2M variant's
    // THPs come from order-9 blocks, which only a THP touch is sure to give back backed)
    let prefault = if sys::virtio_balloon() {
        check_signal()?;
        Some(page_reporting::prefault(&spec.scenario)?)
    } else {
        None
    };
    let mut devices = Vec::new();
    let mut swap_info = Vec::new();
    let swap_files = plays_with_swap_files(spec.knobs.thp_swap, host.thp_swap);
    for swap in &spec.scenario.swap {
        check_signal()?;
        let setup = if swap_files {
            let dir = std::env::temp_dir().join(format!("{prefix}-{}", swap.name));
            session
                .add_zram_swap_file(swap.size_bytes, swap.priority, &dir)
                .map(|(z, algorithm, file)| (z, algorithm, Some(file)))
        } else {
            session
                .add_zram_swap(swap.size_bytes, swap.priority, swap.discard)
                .map(|(z, algorithm)| (z, algorithm, None))
        };
        let (z, algorithm, file) =
            setup.map_err(|e| failed(format!("swap device {}: {e}", swap.name)))?;
        let mut info = json!({
            "name": swap.name, "device": z.name(), "kind": "zram", "comp_algorithm": algorithm,
            "size_bytes": swap.size_bytes, "priority": swap.priority,
        });
        match &file {
            Some(file) => {
                eprintln!(
                    "  swap {}: {} on ext4 on {} ({algorithm})",
                    swap.name,
                    file.display(),
                    z.dev().display()
                );
                info["swap_file"] = json!(file.display().to_string());
                info["plays"] = json!(format!("{}=n", knobs::THP_SWAP_OPTION));
            }
            None => eprintln!("  swap {}: {} ({algorithm})", swap.name, z.dev().display()),
        }
        if swap.kind != SwapKind::Zram {
            info["substitutes"] = json!(kind_name(swap.kind));
        }
        swap_info.push(info);
        devices.push((swap.name.clone(), z));
    }
    let mut cgroups = Vec::new();
    for cg in &spec.scenario.cgroups {
        check_signal()?;
        let dir = session
            .add_cgroup(
                &host.hierarchy,
                &format!("{prefix}-{}", cg.name),
                cg.memory_max_bytes,
                spec.knobs.swappiness,
                &super::cgroup::ZswapLimits {
                    max_bytes: cg.zswap_max_bytes,
                    writeback: cg.zswap_writeback,
                },
            )
            .map_err(failed)?;
        eprintln!("  cgroup {}: {}", cg.name, dir.display());
        cgroups.push((cg.name.clone(), dir));
    }
    // tasks outside every scenario cgroup still run confined, in a group without a limit ('@'
    // cannot appear in a scenario's names, so it cannot collide with one of theirs)
    let default_group = if spec.scenario.tasks.iter().any(|t| t.cgroup.is_none()) {
        let dir = session
            .add_cgroup(
                &host.hierarchy,
                &format!("{prefix}@default"),
                None,
                spec.knobs.swappiness,
                &Default::default(),
            )
            .map_err(failed)?;
        eprintln!("  cgroup (tasks without one): {}", dir.display());
        Some(dir)
    } else {
        None
    };
    let scratch = std::env::temp_dir().join(&prefix);
    session.add_dir(&scratch).map_err(failed)?;
    let mut tmpfs_info = Vec::new();
    for mount in tmpfs::plan(&spec.scenario.files, &scratch) {
        check_signal()?;
        session
            .add_tmpfs(&mount)
            .map_err(|e| failed(format!("tmpfs huge={}: {e}", mount.huge.name())))?;
        eprintln!("  tmpfs {}: {}", mount.options(), mount.dir.display());
        tmpfs_info.push(json!({
            "dir": mount.dir.display().to_string(),
            "options": mount.options(),
            "files": mount.files.iter().map(|(id, path, size)| json!({
                "name": spec.scenario.files[*id].name,
                "path": path.display().to_string(),
                "size_bytes": size,
            })).collect::<Vec<_>>(),
        }));
    }
    Ok(Setup {
        changes,
        devices,
        swap_info,
        cgroups,
        default_group,
        scratch,
        tmpfs_info,
        page_reporting: held_off,
        prefault,
    })
}
