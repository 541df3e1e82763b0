//! Input at the edges of what the model can hold: each is refused with the key and the limit
//! (exit 2 in the CLI) instead of wrapping, clamping or being ignored.

use foliosim::scenario::parse::resolve;
use foliosim::{InputError, Scenario};

fn parse(toml: &str) -> Result<Scenario, InputError> {
    Scenario::parse_str(toml, "t.toml")
}

fn refused(toml: &str) -> InputError {
    match parse(toml) {
        Ok(_) => panic!("expected the scenario to be refused"),
        Err(e) => e,
    }
}

/// The error of resolving `variant` of a scenario that parses.
fn refused_variant(toml: &str, variant: &str) -> InputError {
    let s = parse(toml).expect("scenario parses");
    match resolve(&s, "v6.18", Some(variant), &[], 1, false) {
        Ok(_) => panic!("expected variant {variant} to be refused"),
        Err(e) => e,
    }
}

fn assert_names(e: &InputError, key: &str, words: &[&str]) {
    assert_eq!(e.key, key, "{e}");
    for w in words {
        assert!(e.message.contains(w), "{e} should say {w}");
    }
}

const MACHINE: &str = "name = \"t\"\n[[machine.node]]\nmemory = \"1G\"\ncpus = 2\n";

fn ops_task(ops: &str) -> String {
    format!("{MACHINE}[[task]]\nname = \"a\"\nops = [\n{ops}\n]\n")
}

fn generator_task(generator: &str, params: &str, args: &str) -> String {
    format!(
        "{MACHINE}[[variant]]\nname = \"v\"\nargs = {{ {args} }}\n\
         [[task]]\nname = \"g\"\ngenerator = \"{generator}\"\n{params}\n"
    )
}

#[test]
fn a_mapping_beyond_the_address_space_is_refused_not_wrapped() {
    // 16T + 4K was 2^32 + 1 pages: it ran as a one-page mapping with no faults
    let e = refused(&ops_task(
        "{ op = \"mmap\", region = \"x\", size = 17592186048512 },\n\
         { op = \"touch\", region = \"x\", access = \"write\", count = 10 },",
    ));
    assert_names(&e, "task[0].ops[0].size", &["at most 15 TiB"]);
    // the address space is used up by every mapping of the program, a fork child's included
    let e = refused(&ops_task(
        "{ op = \"mmap\", region = \"x\", size = \"8T\" },\n\
         { op = \"munmap\", region = \"x\" },\n\
         { op = \"fork\", name = \"c\", ops = [ { op = \"mmap\", region = \"y\", size = \"8T\" } ] },",
    ));
    assert_names(&e, "task[0].ops[2].ops[0].size", &["at most 15 TiB"]);
    assert!(parse(&ops_task(
        "{ op = \"mmap\", region = \"x\", size = \"8T\" },"
    ))
    .is_ok());
}

#[test]
fn generator_sizes_are_bounded_by_the_address_space() {
    let e = refused(&generator_task("usemem", "size = \"16T\"", ""));
    assert_names(&e, "task[0].size", &["at most 15 TiB"]);
    let e = refused_variant(
        &generator_task("usemem", "size = \"1M\"", "size = \"17T\""),
        "v",
    );
    assert_names(&e, "variant.v.args.size", &["at most 15 TiB"]);
    // XSBench's arrays: isotopes x gridpoints points, the index array 4 B per isotope each
    let e = refused(&generator_task(
        "xsbench",
        "isotopes = 4096\ngridpoints = 16777216",
        "",
    ));
    assert_names(&e, "task[0].gridpoints", &["at most 15 TiB"]);
}

#[test]
fn kbuild_job_sizes_from_the_task_or_a_variant_keep_size_min_at_most_size_max() {
    let kbuild = |args: &str| {
        generator_task(
            "kbuild",
            "jobs = 2\nunits = 4\nsize_min = \"8M\"\nsize_max = \"16M\"",
            args,
        )
    };
    let s = parse(&kbuild("size_min = \"16M\", size_max = \"32M\"")).unwrap();
    assert!(resolve(&s, "v6.18", Some("v"), &[], 1, false).is_ok());
    // each argument alone against the task's other size
    let e = refused_variant(&kbuild("size_min = \"32M\""), "v");
    assert_names(&e, "variant.v.args.size_max", &["at least size_min"]);
    let e = refused_variant(&kbuild("size_max = \"4M\""), "v");
    assert_names(&e, "variant.v.args.size_max", &["at least size_min"]);
    let e = refused_variant(&kbuild("size_min = \"0\""), "v");
    assert_names(&e, "variant.v.args.size_min", &["above 0"]);
    let e = refused(&generator_task(
        "kbuild",
        "size_min = \"32M\"\nsize_max = \"16M\"",
        "",
    ));
    assert_names(&e, "task[0].size_max", &["at least size_min"]);
}

#[test]
fn variant_counts_are_refused_out_of_range_not_wrapped_or_clamped() {
    for (generator, params, args, key, range) in [
        // 2^32 + 1 processes ran 1 process
        (
            "usemem",
            "size = \"1M\"",
            "processes = 4294967297",
            "processes",
            "1..=16384",
        ),
        // 2^32 iterations ran none
        (
            "thp_swap_allocator",
            "",
            "iterations = 4294967296",
            "iterations",
            "1..=10000",
        ),
        ("xsbench", "", "threads = 100000", "threads", "1..=256"),
        (
            "zero_subpage",
            "size = \"2M\"",
            "offset = 99999",
            "offset",
            "0..=4095",
        ),
        (
            "zero_subpage",
            "size = \"2M\"",
            "num_dirty = 513",
            "num_dirty",
            "1..=512",
        ),
        (
            "fork_cow",
            "size = \"1M\"",
            "children = 65",
            "children",
            "1..=64",
        ),
    ] {
        let e = refused_variant(&generator_task(generator, params, args), "v");
        assert_names(&e, &format!("variant.v.args.{key}"), &[range]);
    }
    // what was refused before keeps its message
    let e = refused_variant(
        &generator_task("usemem", "size = \"1M\"", "processes = 0"),
        "v",
    );
    assert_eq!(e.message, "expected a positive integer");
    // in range still applies
    let s = parse(&generator_task(
        "zero_subpage",
        "size = \"2M\"",
        "offset = 0",
    ))
    .unwrap();
    assert!(resolve(&s, "v6.18", Some("v"), &[], 1, false).is_ok());
}

#[test]
fn task_counts_have_the_limits_the_engine_can_run() {
    let e = refused(&generator_task(
        "usemem",
        "size = \"1M\"\nprocesses = 65536",
        "",
    ));
    assert_names(&e, "task[0].processes", &["1..=16384"]);
    let e = refused(&generator_task(
        "thp_swap_allocator",
        "iterations = 100000",
        "",
    ));
    assert_names(&e, "task[0].iterations", &["1..=10000"]);
}

#[test]
fn sleeps_past_the_simulated_clock_are_refused() {
    // two sleeps of 584 years ended at 0.37 ms: the clock wrapped
    let e = refused(&ops_task(
        "{ op = \"sleep\", time = \"18446744073s\" },\n{ op = \"sleep\", time = \"18446744073s\" },",
    ));
    assert_names(&e, "task[0].ops[0].time", &["at most"]);
    // each within the limit, together over it
    let e = refused(&format!(
        "sample_interval = \"1s\"\n{}",
        ops_task(
            "{ op = \"sleep\", time = \"600000s\" },\n{ op = \"sleep\", time = \"600000s\" },"
        )
    ));
    assert_names(&e, "task[0].ops[1].time", &["1000000 s"]);
    // touch work counts as well: count x work
    let e = refused(&ops_task(
        "{ op = \"mmap\", region = \"x\", size = \"1M\" },\n\
         { op = \"touch\", region = \"x\", access = \"read\", count = 2000000, work = \"10s\" },",
    ));
    assert_names(&e, "task[0].ops[1].work", &["at most"]);
}

#[test]
fn a_sleep_ends_where_it_says() {
    let s = parse(&format!(
        "sample_interval = \"1s\"\n{}",
        ops_task("{ op = \"sleep\", time = \"300s\" },\n{ op = \"sleep\", time = \"300s\" },")
    ))
    .unwrap();
    let spec = resolve(&s, "v6.18", None, &[], 1, true).unwrap();
    let r = foliosim::run(&spec, &mut |_| {}).unwrap();
    assert!(r.sim_time_ns >= 600_000_000_000, "{}", r.sim_time_ns);
}

#[test]
fn a_sample_interval_below_1ms_is_refused() {
    let e = refused(&format!(
        "sample_interval = \"1ns\"\n{}",
        ops_task("{ op = \"exit\" },")
    ));
    assert_names(&e, "sample_interval", &["at least 1ms"]);
    assert!(parse(&format!(
        "sample_interval = \"1ms\"\n{}",
        ops_task("{ op = \"exit\" },")
    ))
    .is_ok());
}

#[test]
fn args_without_a_generator_task_are_refused() {
    let toml = format!(
        "{MACHINE}[[variant]]\nname = \"v\"\nargs = {{ processes = 2 }}\n\
         [[task]]\nname = \"a\"\nops = [ {{ op = \"exit\" }} ]\n"
    );
    let e = refused(&toml);
    assert_names(&e, "variant[0].args", &["generator"]);
}

#[test]
fn a_swap_device_listed_twice_is_refused() {
    let toml = format!(
        "{MACHINE}[[swap]]\nname = \"s\"\nkind = \"brd\"\nsize = \"64M\"\n\
         [[variant]]\nname = \"v\"\nswapon = [\"s\", \"s\"]\n\
         [[task]]\nname = \"a\"\nops = [ {{ op = \"exit\" }} ]\n"
    );
    let e = refused(&toml);
    assert_names(&e, "variant[0].swapon", &["\"s\" a second time"]);
}

#[test]
fn a_file_the_page_cache_cannot_index_is_refused() {
    // 16T (the documented maximum) was 2^32 pages: the page count wrapped to 0
    let file = |size: &str| {
        format!(
            "{MACHINE}[[file]]\nname = \"f\"\nsize = \"{size}\"\n\
             [[task]]\nname = \"a\"\nops = [ {{ op = \"read\", file = \"f\", len = \"4K\" }} ]\n"
        )
    };
    let e = refused(&file("16T"));
    assert_names(&e, "file[0].size", &["at most 8 TiB"]);
    assert!(parse(&file("8T")).is_ok());
}

#[test]
fn published_metrics_are_checked_at_load() {
    let published = |metric: &str| {
        format!(
            "{MACHINE}[[variant]]\nname = \"v\"\n[[task]]\nname = \"a\"\nops = [ {{ op = \"exit\" }} ]\n\
             [[published.figure]]\nprofile = \"v6.18\"\nvariant = \"v\"\nmetric = \"{metric}\"\npublished = 1\n"
        )
    };
    assert!(parse(&published("sim_time_s")).is_ok());
    assert!(parse(&published("relative:sys_ns:v")).is_ok());
    let e = refused(&published("sim_time"));
    assert_names(&e, "published.figure[0].metric", &["sim_time_s"]);
    let e = refused(&published("relative:sys_ns:w"));
    assert_names(&e, "published.figure[0].metric", &["base variant", "\"w\""]);
    let e = refused(&published("sim_time_relative_profile:v6.9"));
    assert_names(&e, "published.figure[0].metric", &["base profile", "v6.18"]);
}

#[test]
fn the_bundled_scenarios_still_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
