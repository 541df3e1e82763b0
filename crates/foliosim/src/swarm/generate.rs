//! The swarm's scenario model: a small random valid scenario, drawn from a seed with the crate's
//! own PRNG, that renders to TOML text and that the minimiser can cut down piece by piece.
//!
//! Sizes are kept in 4 KiB pages so that halving one keeps it page-aligned; a cut that leaves an
//! invalid scenario (an op on a region no longer mapped, an offset past a shrunk region) is simply
//! refused by the parser, and the minimiser tries the next one.

use std::fmt::Write;

use crate::sim::rng::Rng;

const PAGE_KIB: u64 = 4;
const MIB_PAGES: u64 = 256;

/// One generated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmScenario {
    pub seed: u64,
    pub profile: String,
    pub hardware: &'static str,
    pub nodes: Vec<NodeGen>,
    pub swaps: Vec<SwapGen>,
    pub cgroups: Vec<CgroupGen>,
    pub knobs: Vec<(String, String)>,
    pub files: Vec<FileGen>,
    pub tasks: Vec<TaskGen>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodeGen {
    pub memory_pages: u64,
    pub cpus: u64,
    pub cxl: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SwapGen {
    pub kind: &'static str,
    pub size_pages: u64,
    pub priority: Option<i64>,
    pub discard: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CgroupGen {
    /// None is "max".
    pub max_pages: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FileGen {
    pub size_bytes: u64,
    pub read_ahead_kb: Option<u64>,
    pub large_folios: Option<bool>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskGen {
    pub name: String,
    pub cgroup: Option<usize>,
    pub node: usize,
    pub mempolicy: Option<String>,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Ops(Vec<OpGen>),
    /// A generator name and its parameters as (key, TOML value text).
    Generator(&'static str, Vec<(&'static str, GenArg)>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum GenArg {
    Pages(u64),
    Count(u64),
    Bool(bool),
}

/// A page range inside a region or file: (offset, len) in pages.
pub type Range = Option<(u64, Option<u64>)>;

#[derive(Clone, Debug, PartialEq)]
pub enum OpGen {
    Mmap {
        region: String,
        pages: u64,
    },
    MmapFile {
        region: String,
        file: usize,
        offset_pages: u64,
        pages: Option<u64>,
        shared: bool,
        prot: &'static str,
    },
    Munmap {
        region: String,
    },
    Madvise {
        region: String,
        advice: &'static str,
        range: Range,
    },
    Touch {
        region: String,
        write: bool,
        pattern: &'static str,
        theta_tenths: Option<u64>,
        range: Range,
        count: Option<u64>,
        work_ns: Option<u64>,
        data: Option<String>,
    },
    Sleep {
        us: u64,
    },
    Barrier {
        index: u64,
    },
    Fork {
        name: String,
        ops: Vec<OpGen>,
    },
    Exit,
    Read {
        file: usize,
        range: Range,
        buffer_pages: u64,
    },
    Write {
        file: usize,
        range: Range,
        buffer_pages: u64,
        data: Option<String>,
    },
    Fsync {
        file: usize,
    },
    SetMempolicy {
        mode: String,
    },
    Mbind {
        region: String,
        mode: String,
        range: Range,
        mf_move: bool,
    },
}

const PROFILES: [&str; 4] = ["v6.9", "v6.10", "v6.12", "v6.18"];
const FEATURES: [&str; 3] = ["+migrc", "+thp_zero_split", "+pagecache_promotion"];
const SWAP_KINDS: [&str; 5] = ["zram", "ssd", "hdd", "brd", "file"];
const ADVICES: [&str; 5] = ["hugepage", "nohugepage", "pageout", "cold", "dontneed"];
const THP: &str = "/sys/kernel/mm/transparent_hugepage";
const MTHP_SIZES_KB: [u64; 8] = [16, 32, 64, 128, 256, 512, 1024, 2048];

/// The profile a seed's scenario runs under, without drawing the rest (for per-profile figures).
pub fn base_profile(profile: &str) -> &str {
    profile.split('+').next().unwrap_or(profile)
}

fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[rng.below(items.len() as u64) as usize]
}

fn chance(rng: &mut Rng, percent: u64) -> bool {
    rng.below(100) < percent
}

/// Between lo and hi inclusive.
fn between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// A power-of-two size in pages between lo and hi pages, sometimes with an odd remainder.
fn pages_between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    let (lo_log, hi_log) = (lo.ilog2() as u64, hi.ilog2() as u64);
    let base = 1u64 << between(rng, lo_log, hi_log);
    if chance(rng, 20) {
        (base + rng.below(base)).clamp(lo, hi)
    } else {
        base
    }
}

/// What the op generator knows at a point of a program.
struct Region {
    name: String,
    pages: u64,
    readonly: bool,
}

struct Ctx<'a> {
    rng: &'a mut Rng,
    nr_nodes: usize,
    files: &'a [FileGen],
    next_region: u64,
    next_task: &'a mut u64,
    budget_ops: u64,
    max_region_pages: u64,
}

impl SwarmScenario {
    /// Draws the scenario of `seed`.
    pub fn generate(seed: u64) -> SwarmScenario {
        let mut rng = Rng::new(seed ^ 0x5eed_5a12_0000_0000);
        let rng = &mut rng;
        let mut profile = pick(rng, &PROFILES).to_string();
        for f in FEATURES {
            if chance(rng, 12) {
                profile.push_str(f);
            }
        }
        let hardware = if chance(rng, 80) {
            "x86-server"
        } else {
            "arm64-altra"
        };
        let mut nodes = vec![NodeGen {
            memory_pages: pages_between(rng, 64 * MIB_PAGES, 1024 * MIB_PAGES),
            cpus: between(rng, 1, 4),
            cxl: false,
        }];
        if chance(rng, 35) {
            let cxl = chance(rng, 60);
            nodes.push(NodeGen {
                memory_pages: pages_between(rng, 64 * MIB_PAGES, 1024 * MIB_PAGES),
                cpus: if cxl && chance(rng, 50) {
                    0
                } else {
                    between(rng, 1, 4)
                },
                cxl,
            });
        }
        let total_pages: u64 = nodes.iter().map(|n| n.memory_pages).sum();
        let swaps: Vec<SwapGen> = (0..pick(rng, &[0, 1, 1, 1, 2]))
            .map(|_| SwapGen {
                kind: pick(rng, &SWAP_KINDS),
                size_pages: pages_between(rng, 2, 256 * MIB_PAGES),
                priority: chance(rng, 30).then(|| between(rng, 0, 20) as i64 - 10),
                discard: chance(rng, 15),
            })
            .collect();
        let cgroups: Vec<CgroupGen> = (0..pick(rng, &[0, 1, 1, 2]))
            .map(|_| CgroupGen {
                max_pages: (!chance(rng, 10))
                    .then(|| pages_between(rng, 4 * MIB_PAGES, total_pages.min(256 * MIB_PAGES))),
            })
            .collect();
        let knobs = random_knobs(rng);
        let files: Vec<FileGen> = (0..pick(rng, &[0, 0, 1, 2]))
            .map(|_| FileGen {
                size_bytes: if chance(rng, 20) {
                    between(rng, 1, 1 << 20)
                } else {
                    pages_between(rng, 1, 32 * MIB_PAGES) * PAGE_KIB * 1024
                },
                read_ahead_kb: chance(rng, 20).then(|| pick(rng, &[0, 16, 128, 512])),
                large_folios: chance(rng, 20).then(|| chance(rng, 50)),
            })
            .collect();
        let nodes_with_cpus: Vec<usize> = (0..nodes.len()).filter(|&n| nodes[n].cpus > 0).collect();
        let nr_cgroups = cgroups.len();
        let mut next_task = 0u64;
        let mut tasks = Vec::new();
        let max_region_pages = (total_pages / 4).min(64 * MIB_PAGES);
        for t in 0..between(rng, 1, 3) {
            let name = format!("t{t}");
            let cgroup =
                (nr_cgroups > 0 && chance(rng, 70)).then(|| rng.below(nr_cgroups as u64) as usize);
            let node = pick(rng, &nodes_with_cpus);
            let mempolicy = chance(rng, 20).then(|| random_policy(rng, nodes.len(), false));
            let body = if chance(rng, 20) {
                random_generator(rng)
            } else {
                let mut cx = Ctx {
                    rng,
                    nr_nodes: nodes.len(),
                    files: &files,
                    next_region: 0,
                    next_task: &mut next_task,
                    budget_ops: 24,
                    max_region_pages,
                };
                Body::Ops(random_ops(&mut cx, &mut Vec::new(), 0, 0))
            };
            tasks.push(TaskGen {
                name,
                cgroup,
                node,
                mempolicy,
                body,
            });
        }
        SwarmScenario {
            seed,
            profile,
            hardware,
            nodes,
            swaps,
            cgroups,
            knobs,
            files,
            tasks,
        }
    }

    /// The scenario as TOML text, as a user would write it.
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "name = \"swarm-{}\"", self.seed);
        let _ = writeln!(s, "profiles = [\"{}\"]", self.profile);
        let _ = writeln!(s, "\n[machine]\nhardware = \"{}\"", self.hardware);
        for n in &self.nodes {
            let _ = writeln!(
                s,
                "[[machine.node]]\nmemory = \"{}\"\ncpus = {}",
                size_text(n.memory_pages),
                n.cpus
            );
            if n.cxl {
                let _ = writeln!(s, "tier = \"cxl\"");
            }
        }
        for (i, d) in self.swaps.iter().enumerate() {
            let _ = writeln!(
                s,
                "\n[[swap]]\nname = \"sw{i}\"\nkind = \"{}\"\nsize = \"{}\"",
                d.kind,
                size_text(d.size_pages)
            );
            if let Some(p) = d.priority {
                let _ = writeln!(s, "priority = {p}");
            }
            if d.discard {
                let _ = writeln!(s, "discard = true");
            }
        }
        for (i, c) in self.cgroups.iter().enumerate() {
            let max = match c.max_pages {
                Some(p) => size_text(p),
                None => "max".into(),
            };
            let _ = writeln!(
                s,
                "\n[[cgroup]]\nname = \"cg{i}\"\n\"memory.max\" = \"{max}\""
            );
        }
        if !self.knobs.is_empty() {
            let _ = writeln!(s, "\n[knobs]");
            for (k, v) in &self.knobs {
                let _ = writeln!(s, "\"{k}\" = \"{v}\"");
            }
        }
        for (i, f) in self.files.iter().enumerate() {
            let _ = writeln!(s, "\n[[file]]\nname = \"f{i}\"\nsize = {}", f.size_bytes);
            if let Some(r) = f.read_ahead_kb {
                let _ = writeln!(s, "read_ahead_kb = {r}");
            }
            if let Some(l) = f.large_folios {
                let _ = writeln!(s, "large_folios = {l}");
            }
        }
        for t in &self.tasks {
            let _ = writeln!(s, "\n[[task]]\nname = \"{}\"", t.name);
            if let Some(c) = t.cgroup {
                let _ = writeln!(s, "cgroup = \"cg{c}\"");
            }
            if t.node != 0 {
                let _ = writeln!(s, "node = {}", t.node);
            }
            if let Some(m) = &t.mempolicy {
                let _ = writeln!(s, "mempolicy = \"{m}\"");
            }
            match &t.body {
                Body::Generator(name, args) => {
                    let _ = writeln!(s, "generator = \"{name}\"");
                    for (k, v) in args {
                        let _ = writeln!(s, "{k} = {}", render_arg(v));
                    }
                }
                Body::Ops(ops) => {
                    let _ = writeln!(s, "ops = [");
                    for op in ops {
                        render_op(&mut s, op, 1);
                    }
                    let _ = writeln!(s, "]");
                }
            }
        }
        s
    }
}

/// A size in pages as the scenario format writes it: "512M", or "12K" when not whole MiB.
fn size_text(pages: u64) -> String {
    if pages.is_multiple_of(MIB_PAGES) {
        format!("{}M", pages / MIB_PAGES)
    } else {
        format!("{}K", pages * PAGE_KIB)
    }
}

fn render_arg(v: &GenArg) -> String {
    match v {
        GenArg::Pages(p) => format!("\"{}\"", size_text(*p)),
        GenArg::Count(c) => c.to_string(),
        GenArg::Bool(b) => b.to_string(),
    }
}

fn render_range(fields: &mut Vec<String>, range: &Range) {
    if let Some((offset, len)) = range {
        fields.push(format!("offset = \"{}\"", size_text(*offset)));
        if let Some(len) = len {
            fields.push(format!("len = \"{}\"", size_text(*len)));
        }
    }
}

fn render_op(s: &mut String, op: &OpGen, depth: usize) {
    let indent = "  ".repeat(depth);
    let q = |v: &str| format!("\"{v}\"");
    let mut f: Vec<String> = Vec::new();
    match op {
        OpGen::Mmap { region, pages } => {
            f.push("op = \"mmap\"".into());
            f.push(format!("region = {}", q(region)));
            f.push(format!("size = \"{}\"", size_text(*pages)));
        }
        OpGen::MmapFile {
            region,
            file,
            offset_pages,
            pages,
            shared,
            prot,
        } => {
            f.push("op = \"mmap\"".into());
            f.push(format!("region = {}", q(region)));
            f.push(format!("file = \"f{file}\""));
            f.push(format!("offset = \"{}\"", size_text(*offset_pages)));
            if let Some(p) = pages {
                f.push(format!("size = \"{}\"", size_text(*p)));
            }
            f.push(format!("shared = {shared}"));
            f.push(format!("prot = {}", q(prot)));
        }
        OpGen::Munmap { region } => {
            f.push("op = \"munmap\"".into());
            f.push(format!("region = {}", q(region)));
        }
        OpGen::Madvise {
            region,
            advice,
            range,
        } => {
            f.push("op = \"madvise\"".into());
            f.push(format!("region = {}", q(region)));
            f.push(format!("advice = {}", q(advice)));
            render_range(&mut f, range);
        }
        OpGen::Touch {
            region,
            write,
            pattern,
            theta_tenths,
            range,
            count,
            work_ns,
            data,
        } => {
            f.push("op = \"touch\"".into());
            f.push(format!("region = {}", q(region)));
            f.push(format!(
                "access = \"{}\"",
                if *write { "write" } else { "read" }
            ));
            f.push(format!("pattern = {}", q(pattern)));
            if let Some(t) = theta_tenths {
                f.push(format!("theta = {}.{}", t / 10, t % 10));
            }
            render_range(&mut f, range);
            if let Some(c) = count {
                f.push(format!("count = {c}"));
            }
            if let Some(w) = work_ns {
                f.push(format!("work = \"{w}ns\""));
            }
            if let Some(d) = data {
                f.push(format!("data = {d}"));
            }
        }
        OpGen::Sleep { us } => {
            f.push("op = \"sleep\"".into());
            f.push(format!("time = \"{us}us\""));
        }
        OpGen::Barrier { index } => {
            f.push("op = \"barrier\"".into());
            f.push(format!("name = \"b{index}\""));
        }
        OpGen::Fork { name, ops } => {
            let _ = writeln!(s, "{indent}{{ op = \"fork\", name = {}, ops = [", q(name));
            for op in ops {
                render_op(s, op, depth + 1);
            }
            let _ = writeln!(s, "{indent}] }},");
            return;
        }
        OpGen::Exit => f.push("op = \"exit\"".into()),
        OpGen::Read {
            file,
            range,
            buffer_pages,
        } => {
            f.push("op = \"read\"".into());
            f.push(format!("file = \"f{file}\""));
            render_range(&mut f, range);
            f.push(format!("buffer = \"{}\"", size_text(*buffer_pages)));
        }
        OpGen::Write {
            file,
            range,
            buffer_pages,
            data,
        } => {
            f.push("op = \"write\"".into());
            f.push(format!("file = \"f{file}\""));
            render_range(&mut f, range);
            f.push(format!("buffer = \"{}\"", size_text(*buffer_pages)));
            if let Some(d) = data {
                f.push(format!("data = {d}"));
            }
        }
        OpGen::Fsync { file } => {
            f.push("op = \"fsync\"".into());
            f.push(format!("file = \"f{file}\""));
        }
        OpGen::SetMempolicy { mode } => {
            f.push("op = \"set_mempolicy\"".into());
            f.push(format!("mode = {}", q(mode)));
        }
        OpGen::Mbind {
            region,
            mode,
            range,
            mf_move,
        } => {
            f.push("op = \"mbind\"".into());
            f.push(format!("region = {}", q(region)));
            f.push(format!("mode = {}", q(mode)));
            render_range(&mut f, range);
            if *mf_move {
                f.push("move = true".into());
            }
        }
    }
    let _ = writeln!(s, "{indent}{{ {} }},", f.join(", "));
}

fn random_knobs(rng: &mut Rng) -> Vec<(String, String)> {
    let mut knobs: Vec<(String, String)> = Vec::new();
    let mut set = |rng: &mut Rng, percent: u64, path: String, values: &[&str]| {
        if chance(rng, percent) {
            knobs.push((path, pick(rng, values).to_string()));
        }
    };
    set(
        rng,
        40,
        format!("{THP}/enabled"),
        &["always", "madvise", "never"],
    );
    set(
        rng,
        25,
        format!("{THP}/defrag"),
        &["always", "defer", "defer+madvise", "madvise", "never"],
    );
    for kb in MTHP_SIZES_KB {
        set(
            rng,
            12,
            format!("{THP}/hugepages-{kb}kB/enabled"),
            &["always", "inherit", "madvise", "never"],
        );
    }
    set(
        rng,
        10,
        format!("{THP}/khugepaged/max_ptes_none"),
        &["0", "64", "511"],
    );
    set(rng, 10, format!("{THP}/shrink_underused"), &["0", "1"]);
    set(
        rng,
        25,
        "/proc/sys/vm/swappiness".into(),
        &["0", "1", "60", "100", "200"],
    );
    set(
        rng,
        15,
        "/proc/sys/vm/page-cluster".into(),
        &["0", "1", "3", "5"],
    );
    set(
        rng,
        15,
        "/proc/sys/vm/min_free_kbytes".into(),
        &["1024", "8192", "32768"],
    );
    set(
        rng,
        10,
        "/proc/sys/vm/watermark_scale_factor".into(),
        &["1", "10", "200"],
    );
    set(
        rng,
        15,
        "/proc/sys/kernel/numa_balancing".into(),
        &["0", "1", "2", "3"],
    );
    set(
        rng,
        20,
        "/sys/kernel/mm/numa/demotion_enabled".into(),
        &["true", "false"],
    );
    set(rng, 15, "CONFIG_THP_SWAP".into(), &["y", "n"]);
    set(
        rng,
        10,
        "/proc/sys/vm/dirty_ratio".into(),
        &["0", "5", "20"],
    );
    set(
        rng,
        10,
        "/proc/sys/vm/dirty_background_ratio".into(),
        &["0", "1", "10"],
    );
    set(
        rng,
        8,
        "/proc/sys/vm/dirty_writeback_centisecs".into(),
        &["0", "1", "500"],
    );
    set(
        rng,
        8,
        "/proc/sys/vm/dirty_expire_centisecs".into(),
        &["0", "1", "3000"],
    );
    set(rng, 8, "swap_migration_ad_supported".into(), &["0", "1"]);
    knobs
}

/// A memory policy naming nodes of an `nr_nodes` machine; `names_nodes` refuses local/default.
fn random_policy(rng: &mut Rng, nr_nodes: usize, names_nodes: bool) -> String {
    let last = nr_nodes - 1;
    let list = match rng.below(3) {
        0 => "0".to_string(),
        1 => last.to_string(),
        _ => format!("0-{last}"),
    };
    let kinds: &[&str] = if names_nodes {
        &[
            "bind",
            "preferred",
            "interleave",
            "preferred_many",
            "bind+balancing",
        ]
    } else {
        &[
            "bind",
            "preferred",
            "interleave",
            "preferred_many",
            "bind+balancing",
            "local",
            "default",
        ]
    };
    match pick(rng, kinds) {
        k @ ("local" | "default") => k.to_string(),
        "preferred" => format!("preferred:{}", rng.below(nr_nodes as u64)),
        k => format!("{k}:{list}"),
    }
}

fn random_generator(rng: &mut Rng) -> Body {
    match rng.below(3) {
        0 => Body::Generator(
            "usemem",
            vec![
                ("processes", GenArg::Count(between(rng, 1, 3))),
                ("size", GenArg::Pages(pages_between(rng, 1, 48 * MIB_PAGES))),
            ],
        ),
        1 => Body::Generator(
            "thp_swap_allocator",
            vec![
                ("aligned", GenArg::Bool(chance(rng, 50))),
                ("small_folios", GenArg::Bool(chance(rng, 50))),
                ("iterations", GenArg::Count(between(rng, 1, 2))),
            ],
        ),
        _ => Body::Generator(
            "fork_cow",
            vec![
                ("size", GenArg::Pages(pages_between(rng, 1, 32 * MIB_PAGES))),
                ("children", GenArg::Count(between(rng, 1, 3))),
                ("writes", GenArg::Count(between(rng, 1, 5000))),
            ],
        ),
    }
}

/// A page range inside `pages` pages, or none (the whole of it).
fn random_range(rng: &mut Rng, pages: u64) -> Range {
    if !chance(rng, 35) {
        return None;
    }
    let offset = rng.below(pages);
    let len = chance(rng, 70).then(|| between(rng, 1, pages - offset));
    Some((offset, len))
}

fn data_value(rng: &mut Rng) -> Option<String> {
    match rng.below(4) {
        0 => Some("\"zero\"".into()),
        1 => Some("\"nonzero\"".into()),
        2 => Some(between(rng, 1, 255).to_string()),
        _ => None,
    }
}

/// An op program. `regions` are those mapped at this point (a fork child starts with a copy);
/// barriers are taken in increasing index from `barrier_floor` on, in every program, so no two
/// tasks can wait for each other at different barriers.
fn random_ops(
    cx: &mut Ctx,
    regions: &mut Vec<Region>,
    depth: usize,
    mut barrier_floor: u64,
) -> Vec<OpGen> {
    let mut ops = Vec::new();
    let len = between(cx.rng, 1, 8);
    for _ in 0..len {
        if cx.budget_ops == 0 {
            break;
        }
        cx.budget_ops -= 1;
        let rng = &mut *cx.rng;
        let roll = rng.below(100);
        let op = if regions.is_empty() || roll < 18 {
            // map something: anonymous, or a file
            let region = format!("r{}", cx.next_region);
            cx.next_region += 1;
            if !cx.files.is_empty() && chance(rng, 30) {
                let file = rng.below(cx.files.len() as u64) as usize;
                let file_pages = cx.files[file].size_bytes.div_ceil(PAGE_KIB * 1024);
                let offset_pages = rng.below(file_pages);
                let pages = chance(rng, 60).then(|| between(rng, 1, file_pages - offset_pages));
                let prot = pick(rng, &["r", "rw", "rx"]);
                let mapped = pages.unwrap_or_else(|| {
                    (cx.files[file].size_bytes - offset_pages * PAGE_KIB * 1024)
                        .div_ceil(PAGE_KIB * 1024)
                });
                regions.push(Region {
                    name: region.clone(),
                    pages: mapped,
                    readonly: prot != "rw",
                });
                OpGen::MmapFile {
                    region,
                    file,
                    offset_pages,
                    pages,
                    shared: chance(rng, 50),
                    prot,
                }
            } else {
                let pages = pages_between(rng, 1, cx.max_region_pages.max(1));
                regions.push(Region {
                    name: region.clone(),
                    pages,
                    readonly: false,
                });
                OpGen::Mmap { region, pages }
            }
        } else if roll < 50 {
            let r = &regions[rng.below(regions.len() as u64) as usize];
            let write = !r.readonly && chance(rng, 65);
            let pattern = pick(rng, &["sequential", "random", "zipf"]);
            let count_cap = 20_000;
            OpGen::Touch {
                region: r.name.clone(),
                write,
                pattern,
                theta_tenths: (pattern == "zipf" && chance(rng, 50)).then(|| between(rng, 3, 15)),
                range: random_range(rng, r.pages),
                count: (pattern != "sequential" || chance(rng, 30))
                    .then(|| between(rng, 1, count_cap)),
                work_ns: chance(rng, 10).then(|| between(rng, 1, 500)),
                data: if write { data_value(rng) } else { None },
            }
        } else if roll < 60 {
            let r = &regions[rng.below(regions.len() as u64) as usize];
            OpGen::Madvise {
                region: r.name.clone(),
                advice: pick(rng, &ADVICES),
                range: random_range(rng, r.pages),
            }
        } else if roll < 70 && depth < 3 {
            let name = format!("p{}", cx.next_task);
            *cx.next_task += 1;
            let mut child_regions: Vec<Region> = regions
                .iter()
                .map(|r| Region {
                    name: r.name.clone(),
                    pages: r.pages,
                    readonly: r.readonly,
                })
                .collect();
            let child = random_ops(cx, &mut child_regions, depth + 1, barrier_floor);
            OpGen::Fork { name, ops: child }
        } else if roll < 74 {
            let i = rng.below(regions.len() as u64) as usize;
            OpGen::Munmap {
                region: regions.remove(i).name,
            }
        } else if roll < 78 {
            OpGen::Sleep {
                us: between(rng, 1, 2000),
            }
        } else if roll < 82 {
            barrier_floor += between(rng, 0, 1);
            OpGen::Barrier {
                index: barrier_floor,
            }
        } else if roll < 86 && cx.nr_nodes > 1 || roll < 83 {
            let r = &regions[rng.below(regions.len() as u64) as usize];
            let mode = random_policy(rng, cx.nr_nodes, false);
            let names_nodes = mode.contains(':');
            OpGen::Mbind {
                region: r.name.clone(),
                mode,
                range: random_range(rng, r.pages),
                mf_move: names_nodes && chance(rng, 50),
            }
        } else if roll < 89 {
            OpGen::SetMempolicy {
                mode: random_policy(rng, cx.nr_nodes, false),
            }
        } else if !cx.files.is_empty() {
            let file = rng.below(cx.files.len() as u64) as usize;
            let pages = cx.files[file].size_bytes.div_ceil(PAGE_KIB * 1024);
            let whole_pages = cx.files[file].size_bytes / (PAGE_KIB * 1024);
            // offsets and lengths in whole pages inside the file's full pages
            let range = if whole_pages > 0 {
                random_range(rng, whole_pages)
            } else {
                None
            };
            let buffer_pages = pages_between(rng, 1, 256);
            match rng.below(5) {
                0 | 1 => OpGen::Read {
                    file,
                    range,
                    buffer_pages,
                },
                2 | 3 => OpGen::Write {
                    file,
                    range,
                    buffer_pages,
                    data: data_value(rng),
                },
                _ => {
                    let _ = pages;
                    OpGen::Fsync { file }
                }
            }
        } else {
            OpGen::Sleep {
                us: between(rng, 1, 100),
            }
        };
        ops.push(op);
    }
    if chance(cx.rng, 5) {
        ops.push(OpGen::Exit);
    }
    ops
}
