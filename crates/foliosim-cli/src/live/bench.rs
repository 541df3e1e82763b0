//! The kernel-bench programs: building them, the command line each scenario task runs, the
//! operation files of the ops player, and the records the programs print.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use foliosim::scenario::{Access, Advice, FileSpec, IterationReport, Op, Pattern, TaskSpec};
use foliosim::workload::LiveProgram;

/// Builds the programs with the system C compiler into `<repository>/target/kernel-bench`;
/// returns that directory.
pub fn build() -> Result<PathBuf, String> {
    crate::make::build("kernel-bench", "kernel-bench")
}

/// One process the runner starts for a scenario task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The scenario task it plays.
    pub task: usize,
    /// The name its figures carry (the task's, or the ops player's process).
    pub name: String,
    pub argv: Vec<String>,
    /// Set in the environment it inherits (a task's `env`).
    pub env: Vec<(String, String)>,
    /// The directory it starts in; None: the runner's.
    pub cwd: Option<PathBuf>,
    /// A kernel-bench program, whose stdout lines are records; a task's command prints what
    /// it likes, passed on to stderr.
    pub prints_records: bool,
    /// The operation file to write for the ops player: (file name, text).
    pub ops_file: Option<(String, String)>,
    /// Top-level barriers its program waits at, in order.
    pub barriers: Vec<String>,
    /// The program joins its cgroup itself once started (`--join PROCS_FILE` before its
    /// arguments): the ops player, whose own memory and start-up are not the scenario's.
    pub joins_cgroup: bool,
}

/// The barrier every ops player waits at once it has started and joined its cgroup. Its
/// release is the live run's time zero, as the simulated tasks all start at 0: the players'
/// exec and start-up (about 10-15 ms on this project's VM, one player several ms after
/// another) are not the scenario's.
pub const START_BARRIER: &str = "foliosim-start";

/// The processes that play a task. `seed` feeds the kbuild generator, as in the simulator;
/// `files` are the scenario's `[[file]]`s, which the run makes under `scratch` (live/tmpfs.rs).
pub fn launches(
    index: usize,
    task: &TaskSpec,
    files: &[FileSpec],
    bin: &Path,
    scratch: &Path,
    seed: u64,
) -> Result<Vec<Launch>, String> {
    let program = |name: &str| bin.join(name).to_string_lossy().into_owned();
    let simple = |argv: Vec<String>| Launch {
        task: index,
        name: task.name.clone(),
        argv,
        env: Vec::new(),
        cwd: None,
        prints_records: true,
        ops_file: None,
        barriers: Vec::new(),
        joins_cgroup: false,
    };
    let player = |name: String, ops: &[Op]| -> Result<Launch, String> {
        let file = format!("{name}.ops");
        let path = scratch.join(&file).to_string_lossy().into_owned();
        // Every player first waits at the start barrier (see START_BARRIER).
        let start = Op::Barrier {
            name: START_BARRIER.into(),
        };
        let ops = &[std::slice::from_ref(&start), ops].concat();
        Ok(Launch {
            task: index,
            name: name.clone(),
            env: Vec::new(),
            cwd: None,
            prints_records: true,
            argv: vec![program("ops_player"), name, path],
            ops_file: Some((file, serialize(ops, files, scratch)?)),
            barriers: ops
                .iter()
                .filter_map(|op| match op {
                    Op::Barrier { name } => Some(name.clone()),
                    _ => None,
                })
                .collect(),
            joins_cgroup: true,
        })
    };
    if task.mempolicy.is_some() {
        // the programs would need set_mempolicy (or numactl) first
        return Err("its mempolicy has no kernel-bench equivalent yet".into());
    }
    // a real program, whatever the simulator plays for the task (its trace)
    if let Some(command) = &task.command {
        return Ok(vec![Launch {
            env: command.env.clone(),
            cwd: command.cwd.as_ref().map(PathBuf::from),
            prints_records: false,
            ..simple(command.argv.clone())
        }]);
    }
    // each generator names its live program (workload/<name>.rs)
    Ok(
        match foliosim::workload::live_program(&task.program, &task.name, seed) {
            Some(LiveProgram::Bench {
                program: name,
                args,
            }) => {
                let mut argv = vec![program(name), task.name.clone()];
                argv.extend(args);
                vec![simple(argv)]
            }
            Some(LiveProgram::Ops(processes)) => processes
                .iter()
                .map(|(name, ops)| player(name.clone(), ops))
                .collect::<Result<_, _>>()?,
            None => {
                return Err(
                    "it has no kernel-bench program: name the real program as its command".into(),
                )
            }
        },
    )
}

/// The ops player's text for a program (format in kernel-bench/ops_player.c): a `file ID PATH`
/// line for each file the program uses (`files` are the scenario's, made under `scratch` by the
/// run), then its operations.
pub fn serialize(ops: &[Op], files: &[FileSpec], scratch: &Path) -> Result<String, String> {
    let mut used = std::collections::BTreeSet::new();
    files_used(ops, &mut used);
    let mut out = String::new();
    for id in used {
        let spec = files
            .get(id as usize)
            .ok_or_else(|| format!("an operation names file {id}, which the scenario lacks"))?;
        let path = crate::live::tmpfs::file_path(scratch, spec).ok_or_else(|| {
            format!(
                "file {:?} is on the disk; kernel-run plays files on tmpfs only (fs = \"tmpfs\"), \
                 having no disk file system of its own",
                spec.name
            )
        })?;
        let path = path.to_string_lossy();
        if path.contains(char::is_whitespace) {
            return Err(format!(
                "the path of file {:?} ({path}) has white space, which the ops player's format \
                 cannot carry (set TMPDIR to another directory)",
                spec.name
            ));
        }
        let _ = writeln!(out, "file {id} {path}");
    }
    write_ops(&mut out, ops, false)?;
    Ok(out)
}

/// The ids of the files a program and the children it forks use.
fn files_used(ops: &[Op], used: &mut std::collections::BTreeSet<u32>) {
    for op in ops {
        match op {
            Op::MmapFile { file, .. } | Op::Fsync { file } => {
                used.insert(*file);
            }
            Op::FileRead(r) => {
                used.insert(r.file);
            }
            Op::FileWrite(w) => {
                used.insert(w.file);
            }
            Op::Fork { child, .. } => files_used(child, used),
            _ => {}
        }
    }
}

fn write_ops(out: &mut String, ops: &[Op], in_fork: bool) -> Result<(), String> {
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    for op in ops {
        // writing to a String cannot fail
        let _ = match op {
            Op::Mmap { region, size_bytes } => writeln!(out, "mmap {region} {size_bytes}"),
            Op::MmapShared { region, size_bytes } => {
                writeln!(out, "mmap_shared {region} {size_bytes}")
            }
            Op::MmapFile {
                region,
                file,
                offset_bytes,
                size_bytes,
                shared,
                write,
                exec,
            } => {
                let sharing = if *shared { "shared" } else { "private" };
                let prot = match (write, exec) {
                    (false, false) => "r",
                    (true, false) => "rw",
                    (false, true) => "rx",
                    (true, true) => "rwx",
                };
                writeln!(
                    out,
                    "mmap_file {region} {file} {offset_bytes} {size_bytes} {sharing} {prot}"
                )
            }
            Op::FileRead(r) => writeln!(
                out,
                "read {} {} {} {}",
                r.file, r.offset_bytes, r.len_bytes, r.buffer_bytes
            ),
            Op::FileWrite(w) => writeln!(
                out,
                "write {} {} {} {} {}",
                w.file, w.offset_bytes, w.len_bytes, w.buffer_bytes, w.data
            ),
            Op::Fsync { file } => writeln!(out, "fsync {file}"),
            Op::Munmap { region } => writeln!(out, "munmap {region}"),
            Op::Madvise {
                region,
                advice,
                offset_bytes,
                len_bytes,
            } => {
                let advice = match advice {
                    Advice::Hugepage => "hugepage",
                    Advice::NoHugepage => "nohugepage",
                    Advice::Pageout => "pageout",
                    Advice::Cold => "cold",
                    Advice::DontNeed => "dontneed",
                };
                writeln!(
                    out,
                    "madvise {region} {advice} {offset_bytes} {}",
                    opt(*len_bytes)
                )
            }
            Op::Touch {
                region,
                access,
                pattern,
                offset_bytes,
                len_bytes,
                count,
                data,
                work_ns,
            } => {
                let access = match access {
                    Access::Read => "read",
                    Access::Write => "write",
                };
                let (pattern, theta_milli) = match pattern {
                    Pattern::Sequential => ("sequential", 0),
                    Pattern::Random => ("random", 0),
                    Pattern::Zipf { theta_milli } => ("zipf", *theta_milli),
                };
                writeln!(
                    out,
                    "touch {region} {access} {pattern} {theta_milli} {offset_bytes} {} {} {data} {work_ns}",
                    opt(*len_bytes),
                    opt(*count)
                )
            }
            Op::Fork { name, child } => {
                let _ = writeln!(out, "fork {name}");
                write_ops(out, child, true)?;
                writeln!(out, "end")
            }
            Op::Sleep { ns } => writeln!(out, "sleep {ns}"),
            Op::Barrier { name } => {
                if in_fork {
                    return Err(format!(
                        "barrier {name:?} in a forked child: the live runner releases barriers only between scenario tasks"
                    ));
                }
                writeln!(out, "barrier {name}")
            }
            Op::Exit => writeln!(out, "exit"),
            Op::IterationStart => writeln!(out, "iteration_start"),
            Op::IterationEnd { report } => match report {
                IterationReport::Time => writeln!(out, "iteration_end time"),
                IterationReport::MthpSwpout { order } => {
                    writeln!(out, "iteration_end mthp {order}")
                }
                #[allow(unreachable_patterns)]
                _ => return Err(format!("the ops player cannot report {report:?}")),
            },
            // operations added to the engine later are refused until the player learns them
            #[allow(unreachable_patterns)]
            _ => return Err(format!("the ops player cannot play {op:?}")),
        };
    }
    Ok(())
}

/// One line a program printed: `kind key=value ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub kind: String,
    pub fields: Vec<(String, String)>,
}

impl Record {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    pub fn number(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }
}

/// Parses a record line; None for anything else.
pub fn parse_record(line: &str) -> Option<Record> {
    let mut words = line.split_whitespace();
    let kind = words.next()?;
    if !kind.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return None;
    }
    let fields = words
        .map(|w| {
            w.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Record {
        kind: kind.to_string(),
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim::scenario::Program;
    use foliosim::Scenario;

    #[test]
    fn ops_serialize_in_the_players_format() {
        let scenario = Scenario::parse_str(
            r#"
name = "t"
[machine]
[[machine.node]]
memory = "1G"
cpus = 1
[[task]]
name = "t"
ops = [
  { op = "mmap", region = "a", size = "2M" },
  { op = "madvise", region = "a", advice = "pageout", offset = "4K", len = "8K" },
  { op = "touch", region = "a", access = "write", pattern = "sequential", data = "nonzero" },
  { op = "touch", region = "a", access = "read", pattern = "zipf", theta = 0.9, count = 10, work = "200ns" },
  { op = "fork", name = "kid", ops = [ { op = "sleep", time = "1ms" } ] },
  { op = "barrier", name = "b" },
  { op = "munmap", region = "a" },
]
"#,
            "t.toml",
        )
        .unwrap();
        let Program::Ops(ops) = &scenario.tasks[0].program else {
            panic!()
        };
        assert_eq!(
            serialize(ops, &[], Path::new("/s")).unwrap(),
            "mmap a 2097152\n\
             madvise a pageout 4096 8192\n\
             touch a write sequential 0 0 - - 128 0\n\
             touch a read zipf 900 0 - 10 128 200\n\
             fork kid\n\
             sleep 1000000\n\
             end\n\
             barrier b\n\
             munmap a\n"
        );
        let l = launches(
            0,
            &scenario.tasks[0],
            &[],
            Path::new("/b"),
            Path::new("/s"),
            1,
        )
        .unwrap();
        assert_eq!(l[0].argv, vec!["/b/ops_player", "t", "/s/t.ops"]);
        assert_eq!(l[0].barriers, vec![START_BARRIER, "b"]);
        let (_, text) = l[0].ops_file.as_ref().unwrap();
        assert!(text.starts_with("barrier foliosim-start\nmmap a 2097152\n"));
        // the player joins its cgroup after its start-up (kernel-bench/ops_player.c)
        assert!(l[0].joins_cgroup);
        let nested = [Op::Fork {
            name: "c".into(),
            child: vec![Op::Barrier { name: "x".into() }],
        }];
        assert!(serialize(&nested, &[], Path::new("/s"))
            .unwrap_err()
            .contains("forked child"));
    }

    #[test]
    fn shmem_and_file_ops_serialize_with_the_files_they_use() {
        let scenario = Scenario::parse_str(
            r#"
name = "t"
[machine]
[[machine.node]]
memory = "1G"
cpus = 1
[[file]]
name = "unused"
size = "4K"
fs = "tmpfs"
[[file]]
name = "db"
size = "8M"
fs = "tmpfs"
huge = "always"
[[file]]
name = "log"
size = "1M"
fs = "tmpfs"
[[file]]
name = "disk"
size = "1M"
[[task]]
name = "t"
ops = [
  { op = "mmap", region = "shm", size = "4M", shared = true },
  { op = "write", file = "db", offset = "4K", len = "64K", buffer = "16K", data = 100 },
  { op = "mmap", region = "m", file = "db", offset = "2M", size = "1M", shared = true },
  { op = "mmap", region = "ro", file = "db", prot = "r" },
  { op = "mmap", region = "x", file = "db", prot = "rx", size = "4K" },
  { op = "fork", name = "kid", ops = [ { op = "read", file = "log" }, { op = "fsync", file = "log" } ] },
  { op = "read", file = "db", buffer = "1M" },
]
[[task]]
name = "d"
ops = [ { op = "read", file = "disk" } ]
"#,
            "t.toml",
        )
        .unwrap();
        let Program::Ops(ops) = &scenario.tasks[0].program else {
            panic!()
        };
        // files by their scenario index, each declared once, the unused one not at all
        assert_eq!(
            serialize(ops, &scenario.files, Path::new("/s")).unwrap(),
            "file 1 /s/tmpfs-always/file-db\n\
             file 2 /s/tmpfs-never/file-log\n\
             mmap_shared shm 4194304\n\
             write 1 4096 65536 16384 100\n\
             mmap_file m 1 2097152 1048576 shared rw\n\
             mmap_file ro 1 0 8388608 private r\n\
             mmap_file x 1 0 4096 private rx\n\
             fork kid\n\
             read 2 0 1048576 1048576\n\
             fsync 2\n\
             end\n\
             read 1 0 8388608 1048576\n"
        );
        // a file on the disk is refused, by name, with what is played instead
        let err = launches(
            1,
            &scenario.tasks[1],
            &scenario.files,
            Path::new("/b"),
            Path::new("/s"),
            1,
        )
        .unwrap_err();
        assert!(
            err.contains("\"disk\" is on the disk") && err.contains("tmpfs"),
            "{err}"
        );
        // the player's format splits on white space: such a path is refused, not mangled
        let err = serialize(ops, &scenario.files, Path::new("/my tmp")).unwrap_err();
        assert!(err.contains("white space"), "{err}");
    }

    #[test]
    fn generators_map_to_their_programs() {
        use foliosim::workload::thp_swap_allocator::ThpSwapAllocator;
        use foliosim::workload::usemem::Usemem;
        use foliosim::workload::zero_subpage::ZeroSubpage;
        let task = |program| TaskSpec {
            name: "x".into(),
            cgroup: None,
            node: 0,
            mempolicy: None,
            program,
            command: None,
        };
        let bin = Path::new("/b");
        let argv = |p| {
            launches(0, &task(p), &[], bin, bin, 1).unwrap()[0]
                .argv
                .clone()
        };
        assert_eq!(
            argv(Program::Generator(Box::new(ThpSwapAllocator {
                aligned: true,
                small_folios: false,
                iterations: 100
            }))),
            vec!["/b/thp_swap_allocator", "x", "-a", "-n", "100"]
        );
        assert_eq!(
            argv(Program::Generator(Box::new(Usemem {
                processes: 4,
                size_bytes: 1 << 20
            }))),
            vec!["/b/usemem", "x", "4", "1048576"]
        );
        assert_eq!(
            argv(Program::Generator(Box::new(ZeroSubpage {
                size_bytes: 4 << 20,
                offset: 4095,
                num_dirty: 512
            }))),
            vec!["/b/zero_subpage", "x", "4194304", "4095", "512"]
        );
        // A memory policy is not played live yet: refused rather than silently dropped.
        let mut t = task(Program::Ops(vec![Op::Exit]));
        t.mempolicy = foliosim::mm::mempolicy::Mempolicy::parse("bind:0", 1).unwrap();
        assert!(launches(0, &t, &[], bin, bin, 1)
            .unwrap_err()
            .contains("mempolicy"));
        let policy_op = [Op::SetMempolicy { policy: None }];
        assert!(serialize(&policy_op, &[], Path::new("/s"))
            .unwrap_err()
            .contains("cannot play"));
    }

    #[test]
    fn a_command_is_launched_as_written_with_its_env_and_cwd() {
        let scenario = Scenario::parse_str(
            r#"
name = "t"
[machine]
[[machine.node]]
memory = "1G"
cpus = 1
[[task]]
name = "sorter"
command = ["/usr/bin/sort", "-S", "8M", "-o", "out.txt", "in.txt"]
env = { LC_ALL = "C" }
cwd = "target/real"
[[task]]
name = "ops-and-command"
command = ["/bin/true"]
ops = [ { op = "mmap", region = "a", size = "4K" } ]
"#,
            "t.toml",
        )
        .unwrap();
        let bin = Path::new("/b");
        let l = launches(0, &scenario.tasks[0], &[], bin, bin, 1).unwrap();
        assert_eq!(
            l,
            vec![Launch {
                task: 0,
                name: "sorter".into(),
                // not the kernel-bench convention (program, task name, args): the argv as written
                argv: ["/usr/bin/sort", "-S", "8M", "-o", "out.txt", "in.txt"]
                    .map(String::from)
                    .to_vec(),
                env: vec![("LC_ALL".into(), "C".into())],
                cwd: Some(PathBuf::from("target/real")),
                prints_records: false,
                ops_file: None,
                barriers: vec![],
                joins_cgroup: false,
            }]
        );
        // the command, not the ops player, plays a task that has both
        let l = launches(1, &scenario.tasks[1], &[], bin, bin, 1).unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].argv, vec!["/bin/true"]);
        assert_eq!(l[0].task, 1);
        assert_eq!(l[0].ops_file, None);
        // the kernel-bench programs print records and are named by their task
        let ops = launches(0, &task_with_ops(), &[], bin, bin, 1).unwrap();
        assert!(ops[0].prints_records);
        assert_eq!(ops[0].name, "x");
    }

    fn task_with_ops() -> TaskSpec {
        TaskSpec {
            name: "x".into(),
            cgroup: None,
            node: 0,
            mempolicy: None,
            program: Program::Ops(vec![Op::Exit]),
            command: None,
        }
    }

    #[test]
    fn a_task_with_nothing_to_play_live_is_refused() {
        let mut t = task_with_ops();
        t.program = Program::LiveOnly;
        let bin = Path::new("/b");
        assert!(launches(0, &t, &[], bin, bin, 1)
            .unwrap_err()
            .contains("command"));
    }

    #[test]
    fn records_parse_and_other_lines_do_not() {
        let r = parse_record("iteration time_ns=5 swpout_inc=233 fallback_inc=0\n").unwrap();
        assert_eq!(r.kind, "iteration");
        assert_eq!(r.number("swpout_inc"), Some(233));
        assert_eq!(r.number("time_ns"), Some(5));
        assert_eq!(r.get("missing"), None);
        assert!(parse_record("Iteration 1: swpout inc: 3").is_none());
        assert!(parse_record("task name=a oops").is_none());
        assert!(parse_record("").is_none());
        let t = parse_record("task name=usemem-3 killed_by=9").unwrap();
        assert_eq!(t.get("name"), Some("usemem-3"));
    }
}
