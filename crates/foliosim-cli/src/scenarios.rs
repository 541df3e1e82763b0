//! The bundled scenarios (`scenarios/*.toml`) and how a command's SCENARIO argument is found:
//! a path to a file, or a bundled scenario's name.

use std::path::{Path, PathBuf};

use foliosim::InputError;

/// Where bundled scenarios live: `./scenarios`, else the repository this binary was built from.
pub fn scenario_dir() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from("scenarios"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
    ];
    candidates.into_iter().find(|d| d.is_dir())
}

/// Every `*.toml` in the scenario directory, sorted by name.
pub fn bundled_scenarios() -> Vec<PathBuf> {
    let Some(dir) = scenario_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    files.sort();
    files
}

pub fn scenario_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The file of bundled scenario `name`; `command` names the argument in the error.
pub fn find_bundled(command: &str, name: &str) -> Result<PathBuf, InputError> {
    let files = bundled_scenarios();
    if let Some(path) = files.iter().find(|p| scenario_name(p) == name) {
        return Ok(path.clone());
    }
    let names: Vec<String> = files.iter().map(|p| scenario_name(p)).collect();
    Err(InputError {
        file: command.into(),
        key: name.into(),
        message: if names.is_empty() {
            "expected a scenario file or a bundled scenario, but no scenarios/ directory was found"
                .into()
        } else {
            format!(
                "expected a scenario file or a bundled scenario, one of {}",
                names.join(", ")
            )
        },
    })
}

/// The file a SCENARIO argument names: a path when it is one (an existing file, or anything
/// with a `/` or ending in `.toml`, so that a missing file says so), else a bundled name.
pub fn find(command: &str, argument: &str) -> Result<PathBuf, InputError> {
    let path = Path::new(argument);
    if path.exists() || argument.contains('/') || argument.ends_with(".toml") {
        Ok(path.to_path_buf())
    } else {
        find_bundled(command, argument)
    }
}
