fn main() {
    for p in std::env::args().skip(1) {
        let t = std::time::Instant::now();
        let w = foliosim::workload::warm_files::WarmFiles { dirs: foliosim::workload::warm_files::SYSTEM_DIRS.iter().map(|s| s.to_string()).collect() };
        let files = w.select(std::path::Path::new(&p)).unwrap();
        let bytes: u64 = files.iter().map(|f| f.size_bytes).sum();
        println!("{p}: {} files, {} bytes, {:.1} s", files.len(), bytes, t.elapsed().as_secs_f64());
        for f in &files { println!("  {} {}", f.path, f.size_bytes); }
    }
}
