//! The swarm (after TigerBeetle's VOPR): for each seed, a random valid small scenario
//! (generate.rs), parsed, resolved and run twice with the invariant checker on. A seed fails
//! when a run panics, the checker finds a broken invariant, the two runs' JSON differ, or the
//! generated scenario is refused (a generator bug). A failure is minimised: tasks, ops, knobs,
//! devices, cgroups and files are removed and sizes and counts halved while the same failure
//! persists, and the smallest scenario is kept as TOML.

pub mod generate;

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub use generate::SwarmScenario;
use generate::{Body, OpGen};

use crate::scenario::parse::resolve;
use crate::{RunError, Scenario};

/// Most runs the minimiser spends on one failure (each candidate costs two runs at most).
const MINIMISE_BUDGET_RUNS: usize = 600;
/// Most runs it spends on a seed over its budget, each of which may run the whole budget.
const MINIMISE_BUDGET_RUNS_OVER_BUDGET: usize = 40;

/// Each run of a seed stops after this many scheduler quanta: a deterministic budget, so that
/// one slow seed (an engine livelock, a pathological scenario) is reported as a failure instead
/// of stalling the swarm. The swarm's seeds need at most a few thousand quanta (the figures in
/// docs/reliability.md); this much takes seconds.
pub const SEED_BUDGET_QUANTA: u64 = 2_000_000;

/// How a seed went.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    /// A run panicked: the message and where.
    Panic(String),
    /// The invariant checker fired: its findings.
    Violation(Vec<String>),
    /// Two runs of the same seed gave different JSON.
    Nondeterministic,
    /// The generated scenario was refused as bad input: a bug of the generator.
    Rejected(String),
    /// A run used its whole budget of quanta without finishing: the message says how far it got.
    BudgetExceeded(String),
}

impl Outcome {
    pub fn failed(&self) -> bool {
        *self != Outcome::Pass
    }

    /// A short label: pass, panic, violation, nondeterministic or rejected.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Panic(_) => "panic",
            Outcome::Violation(_) => "violation",
            Outcome::Nondeterministic => "nondeterministic",
            Outcome::Rejected(_) => "rejected",
            Outcome::BudgetExceeded(_) => "budget exceeded",
        }
    }

    /// One line saying what went wrong.
    pub fn summary(&self) -> String {
        match self {
            Outcome::Pass => "pass".into(),
            Outcome::Panic(m) => format!("panic: {m}"),
            Outcome::Violation(v) => format!(
                "invariant violation: {}{}",
                v.first().map(String::as_str).unwrap_or(""),
                if v.len() > 1 {
                    format!(" (and {} more)", v.len() - 1)
                } else {
                    String::new()
                }
            ),
            Outcome::Nondeterministic => "two runs gave different JSON".into(),
            Outcome::Rejected(m) => format!("generated scenario refused: {m}"),
            Outcome::BudgetExceeded(m) => m.clone(),
        }
    }

    /// What must stay the same while minimising: the kind, and for a panic its location, for a
    /// violation the shape of its first finding (numbers left out), for a refusal the key.
    fn signature(&self) -> String {
        let shape = |s: &str| {
            let mut out = String::new();
            for c in s.chars() {
                if c.is_ascii_digit() {
                    if !out.ends_with('#') {
                        out.push('#');
                    }
                } else {
                    out.push(c);
                }
            }
            out
        };
        match self {
            Outcome::Panic(m) => format!("panic {}", m.rsplit(" at ").next().unwrap_or(m)),
            Outcome::Violation(v) => format!("violation {}", shape(v.first().map_or("", |s| s))),
            // "FILE: KEY: message": the key
            Outcome::Rejected(m) => format!("rejected {}", m.split(": ").nth(1).unwrap_or(m)),
            o => o.label().to_string(),
        }
    }
}

thread_local! {
    /// Where the last panic on this thread happened, recorded by the hook `quiet_panics` installs.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs a panic hook that prints nothing and records where a panic happened, so the swarm's
/// reports name the location. For the swarm's command and tests; other panics stay silent too.
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        PANIC_LOCATION.with(|p| *p.borrow_mut() = at);
    }));
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic".to_string()
    };
    let at = PANIC_LOCATION.with(|p| p.borrow_mut().take());
    match at {
        Some(at) => format!("{message} at {at}"),
        None => message,
    }
}

/// Parses, resolves and runs the scenario text twice with the checker on, each run within
/// SEED_BUDGET_QUANTA.
pub fn check_scenario(text: &str, file: &str, seed: u64) -> Outcome {
    check_scenario_with_budget(text, file, seed, SEED_BUDGET_QUANTA)
}

/// `check_scenario` with each run stopped after `max_quanta` quanta.
pub fn check_scenario_with_budget(text: &str, file: &str, seed: u64, max_quanta: u64) -> Outcome {
    let parsed = catch_unwind(|| Scenario::parse_str(text, file));
    let scenario = match parsed {
        Err(p) => return Outcome::Panic(panic_message(p)),
        Ok(Err(e)) => return Outcome::Rejected(e.to_string()),
        Ok(Ok(s)) => s,
    };
    let profile = scenario.profiles.first().cloned().unwrap_or_default();
    let spec = match resolve(&scenario, &profile, None, &[], seed, true) {
        Ok(spec) => spec,
        Err(e) => return Outcome::Rejected(e.to_string()),
    };
    let mut results = Vec::with_capacity(2);
    for _ in 0..2 {
        let run = catch_unwind(AssertUnwindSafe(|| {
            crate::run_with_budget(&spec, &mut |_| {}, max_quanta)
        }));
        match run {
            Err(p) => return Outcome::Panic(panic_message(p)),
            Ok(Err(RunError::Check(v))) => return Outcome::Violation(v),
            Ok(Err(RunError::Input(e))) => return Outcome::Rejected(e.to_string()),
            Ok(Err(e @ RunError::BudgetExceeded { .. })) => {
                return Outcome::BudgetExceeded(format!("seed {seed}: {e}"))
            }
            Ok(Ok(r)) => results.push(serde_json::to_string(&r).unwrap_or_default()),
        }
    }
    if results[0] != results[1] {
        return Outcome::Nondeterministic;
    }
    Outcome::Pass
}

/// One seed's scenario and how it went.
pub struct SeedReport {
    pub seed: u64,
    pub scenario: SwarmScenario,
    pub outcome: Outcome,
}

/// Generates and checks the scenario of `seed`.
pub fn run_seed(seed: u64) -> SeedReport {
    run_seed_with_budget(seed, SEED_BUDGET_QUANTA)
}

/// `run_seed` with each run stopped after `max_quanta` quanta.
pub fn run_seed_with_budget(seed: u64, max_quanta: u64) -> SeedReport {
    let scenario = SwarmScenario::generate(seed);
    let outcome =
        check_scenario_with_budget(&scenario.to_toml(), &file_name(seed), seed, max_quanta);
    SeedReport {
        seed,
        scenario,
        outcome,
    }
}

/// The name a seed's scenario is given in messages and when written.
pub fn file_name(seed: u64) -> String {
    format!("swarm-{seed}.toml")
}

/// Cuts `scenario` down while it fails as `outcome` does; returns the smallest one found and
/// its outcome.
pub fn minimise(scenario: &SwarmScenario, outcome: &Outcome) -> (SwarmScenario, Outcome) {
    minimise_with_budget(scenario, outcome, SEED_BUDGET_QUANTA)
}

/// `minimise`, each candidate run within `max_quanta` quanta (the budget the failure had).
pub fn minimise_with_budget(
    scenario: &SwarmScenario,
    outcome: &Outcome,
    max_quanta: u64,
) -> (SwarmScenario, Outcome) {
    let target = outcome.signature();
    let (mut best, mut best_outcome) = (scenario.clone(), outcome.clone());
    let mut runs = 0;
    let budget_runs = match outcome {
        Outcome::BudgetExceeded(_) => MINIMISE_BUDGET_RUNS_OVER_BUDGET,
        _ => MINIMISE_BUDGET_RUNS,
    };
    // After a cut that keeps the failure, go on from the same candidate index in the smaller
    // scenario's list; stop after a whole pass without one.
    let mut next = 0;
    let mut since_last_cut = 0;
    loop {
        let list = candidates(&best);
        if list.is_empty() || since_last_cut >= list.len() || runs >= budget_runs {
            break;
        }
        let i = next % list.len();
        runs += 1;
        let candidate = &list[i];
        let o = check_scenario_with_budget(
            &candidate.to_toml(),
            &file_name(best.seed),
            best.seed,
            max_quanta,
        );
        if o.signature() == target {
            best = candidate.clone();
            best_outcome = o;
            since_last_cut = 0;
        } else {
            next = i + 1;
            since_last_cut += 1;
        }
    }
    (best, best_outcome)
}

/// Every scenario one step smaller than `s`: biggest cuts first.
fn candidates(s: &SwarmScenario) -> Vec<SwarmScenario> {
    let mut out = Vec::new();
    let with = |f: &dyn Fn(&mut SwarmScenario)| {
        let mut c = s.clone();
        f(&mut c);
        c
    };
    if s.tasks.len() > 1 {
        for i in 0..s.tasks.len() {
            out.push(with(&|c| {
                c.tasks.remove(i);
            }));
        }
    }
    let nr_ops: usize = s
        .tasks
        .iter()
        .map(|t| match &t.body {
            Body::Ops(ops) => count_ops(ops),
            Body::Generator(..) => 0,
        })
        .sum();
    // a fork replaced by its child's program run in the parent, then any op removed
    for n in 0..nr_ops {
        out.push(with(&|c| {
            edit_nth_op(c, n, &mut |ops, i| {
                if let OpGen::Fork { ops: child, .. } = ops[i].clone() {
                    ops.splice(i..=i, child);
                }
            })
        }));
        out.push(with(&|c| {
            edit_nth_op(c, n, &mut |ops, i| {
                ops.remove(i);
            })
        }));
    }
    if s.nodes.len() > 1 {
        out.push(with(&|c| {
            c.nodes.pop();
        }));
    }
    for i in 0..s.swaps.len() {
        out.push(with(&|c| {
            c.swaps.remove(i);
        }));
    }
    for i in 0..s.cgroups.len() {
        out.push(with(&|c| {
            c.cgroups.remove(i);
            for t in &mut c.tasks {
                t.cgroup = match t.cgroup {
                    Some(g) if g == i => None,
                    Some(g) if g > i => Some(g - 1),
                    g => g,
                };
            }
        }));
    }
    for i in 0..s.knobs.len() {
        out.push(with(&|c| {
            c.knobs.remove(i);
        }));
    }
    for i in 0..s.files.len() {
        out.push(with(&|c| {
            c.files.remove(i);
        }));
    }
    for i in 0..s.tasks.len() {
        if s.tasks[i].mempolicy.is_some() {
            out.push(with(&|c| c.tasks[i].mempolicy = None));
        }
        if s.tasks[i].cgroup.is_some() {
            out.push(with(&|c| c.tasks[i].cgroup = None));
        }
    }
    if s.profile.contains('+') {
        out.push(with(&|c| {
            c.profile = generate::base_profile(&c.profile).to_string()
        }));
    }
    let mut nr_numbers = 0;
    s.clone().for_each_number(&mut |_| nr_numbers += 1);
    for n in 0..nr_numbers {
        for shrink in [(|v: u64| v / 2) as fn(u64) -> u64, |v: u64| v / 16, |_| 1] {
            let mut c = s.clone();
            let mut i = 0;
            let mut changed = false;
            c.for_each_number(&mut |v| {
                if i == n && shrink(*v) >= 1 && shrink(*v) < *v {
                    *v = shrink(*v);
                    changed = true;
                }
                i += 1;
            });
            if changed {
                out.push(c);
            }
        }
    }
    out
}

fn count_ops(ops: &[OpGen]) -> usize {
    ops.iter()
        .map(|op| match op {
            OpGen::Fork { ops, .. } => 1 + count_ops(ops),
            _ => 1,
        })
        .sum()
}

/// Calls `f` with the op list holding the `n`th op (in program order, a fork before its child's
/// ops) and its index there.
fn edit_nth_op(s: &mut SwarmScenario, n: usize, f: &mut dyn FnMut(&mut Vec<OpGen>, usize)) {
    fn walk(
        ops: &mut Vec<OpGen>,
        n: &mut usize,
        f: &mut dyn FnMut(&mut Vec<OpGen>, usize),
    ) -> bool {
        for i in 0..ops.len() {
            if *n == 0 {
                f(ops, i);
                return true;
            }
            *n -= 1;
            if let OpGen::Fork { ops: child, .. } = &mut ops[i] {
                if walk(child, n, f) {
                    return true;
                }
            }
        }
        false
    }
    let mut n = n;
    for t in &mut s.tasks {
        if let Body::Ops(ops) = &mut t.body {
            if walk(ops, &mut n, f) {
                return;
            }
        }
    }
}

impl SwarmScenario {
    /// Visits every size and count the minimiser may shrink, in a fixed order.
    pub fn for_each_number(&mut self, f: &mut dyn FnMut(&mut u64)) {
        for n in &mut self.nodes {
            f(&mut n.memory_pages);
            f(&mut n.cpus);
        }
        for d in &mut self.swaps {
            f(&mut d.size_pages);
        }
        for c in &mut self.cgroups {
            if let Some(p) = &mut c.max_pages {
                f(p);
            }
        }
        for file in &mut self.files {
            f(&mut file.size_bytes);
        }
        fn ops_numbers(ops: &mut [OpGen], f: &mut dyn FnMut(&mut u64)) {
            for op in ops {
                match op {
                    OpGen::Mmap { pages, .. } => f(pages),
                    OpGen::MmapFile { pages: Some(p), .. } => f(p),
                    OpGen::Touch { count, range, .. } => {
                        if let Some(c) = count {
                            f(c)
                        }
                        range_numbers(range, f);
                    }
                    OpGen::Madvise { range, .. }
                    | OpGen::Mbind { range, .. }
                    | OpGen::Read { range, .. }
                    | OpGen::Write { range, .. } => range_numbers(range, f),
                    OpGen::Sleep { us } => f(us),
                    OpGen::Fork { ops, .. } => ops_numbers(ops, f),
                    _ => {}
                }
            }
        }
        fn range_numbers(range: &mut generate::Range, f: &mut dyn FnMut(&mut u64)) {
            if let Some((offset, len)) = range {
                f(offset);
                if let Some(l) = len {
                    f(l);
                }
            }
        }
        for t in &mut self.tasks {
            match &mut t.body {
                Body::Ops(ops) => ops_numbers(ops, f),
                Body::Generator(_, args) => {
                    for (_, a) in args {
                        match a {
                            generate::GenArg::Pages(p) | generate::GenArg::Count(p) => f(p),
                            generate::GenArg::Bool(_) => {}
                        }
                    }
                }
            }
        }
    }
}
