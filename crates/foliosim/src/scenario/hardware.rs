//! `[machine] hardware` and `--hardware`: a bundled hardware profile by name, or a profile file
//! (docs/hardware.md) by path, read here and checked key by key by `machine::hw`.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::machine::hw::{self, HwProfile, ProfileError};

use super::parse::io_error_text;
use super::walker::toml_syntax_error;
use super::{InputError, Scenario};

/// The largest profile file read: the bundled ones are ~25 KiB, and the bound keeps a path that
/// names something huge from being read whole.
const MAX_PROFILE_FILE_BYTES: u64 = 1 << 20;

/// Why a `hardware` value names no usable profile.
#[derive(Debug)]
pub(crate) enum HardwareError {
    /// Neither a bundled profile's name nor a .toml path: the message says what was expected.
    Unknown(String),
    /// The profile file could not be read or was refused: the error names the file and its key.
    File(InputError),
}

/// The profile `value` names: a bundled profile's name, or, when it ends in `.toml`, a profile
/// file's path, relative to `base_dir` unless absolute. Only a regular file of at most 1 MiB is
/// read (a path may name a device or a FIFO).
pub(crate) fn load_hardware(value: &str, base_dir: &Path) -> Result<Arc<HwProfile>, HardwareError> {
    if !value.ends_with(".toml") {
        return hw::profile(value).ok_or_else(|| {
            HardwareError::Unknown(format!(
                "expected a bundled hardware profile ({}) or a path to a .toml profile file, \
                 found {value:?}",
                hw::profile_names().join(", ")
            ))
        });
    }
    let path = base_dir.join(value);
    let file = path.display().to_string();
    let err = |key: &str, message: String| {
        HardwareError::File(InputError {
            file: file.clone(),
            key: key.to_string(),
            message,
        })
    };
    let metadata = std::fs::metadata(&path)
        .map_err(|e| err("", format!("cannot read: {}", io_error_text(&e))))?;
    if !metadata.is_file() {
        return Err(err(
            "",
            "expected a hardware profile file, found no regular file".into(),
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_PROFILE_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| err("", format!("cannot read: {}", io_error_text(&e))))?;
    if bytes.len() as u64 > MAX_PROFILE_FILE_BYTES {
        return Err(err(
            "",
            "expected a hardware profile of at most 1 MiB".into(),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| err("", "expected UTF-8 text".into()))?;
    match HwProfile::parse(&text) {
        Ok(profile) => Ok(Arc::new(profile)),
        Err(ProfileError::Syntax(e)) => {
            Err(HardwareError::File(toml_syntax_error(&file, &text, &e)))
        }
        Err(ProfileError::Key { key, message }) => Err(err(&key, message)),
    }
}

impl Scenario {
    /// Runs the scenario on the hardware profile `value` names (`--hardware`): a bundled
    /// profile's name or a .toml file's path, relative to the working directory.
    pub fn set_hardware(&mut self, value: &str) -> Result<(), InputError> {
        let profile = load_hardware(value, Path::new("")).map_err(|e| match e {
            HardwareError::Unknown(message) => InputError {
                file: "--hardware".into(),
                key: String::new(),
                message,
            },
            HardwareError::File(e) => e,
        })?;
        self.machine.hardware = value.to_string();
        self.machine.hw = profile;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn a_name_or_a_path_relative_to_the_base() {
        let p = load_hardware("arm64-altra", Path::new("/nonexistent")).unwrap();
        assert_eq!(p.costs.name, "arm64-altra");
        let dir = std::env::temp_dir().join(format!("foliosim-hw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = hw::bundled_text("x86-server")
            .unwrap()
            .replace("name = \"x86-server\"", "name = \"mine\"");
        write(&dir, "mine.toml", &text);
        let p = load_hardware("mine.toml", &dir).unwrap();
        assert_eq!(p.costs.name, "mine");
        assert_eq!(p.costs, HwProfile::parse(&text).unwrap().costs);
        let abs = dir.join("mine.toml");
        assert!(load_hardware(abs.to_str().unwrap(), Path::new("elsewhere")).is_ok());

        write(
            &dir,
            "bad.toml",
            &text.replacen("value = 700\n", "value = -3\n", 1),
        );
        let Err(HardwareError::File(e)) = load_hardware("bad.toml", &dir) else {
            panic!("expected a file error")
        };
        assert_eq!(e.file, dir.join("bad.toml").display().to_string());
        assert_eq!(e.key, "cost.fault_entry_ns.value");
        write(&dir, "syntax.toml", "name = \"x\"\n[cost\n");
        let Err(HardwareError::File(e)) = load_hardware("syntax.toml", &dir) else {
            panic!("expected a file error")
        };
        assert_eq!(e.key, "line 2, column 6");
        assert!(e.message.starts_with("TOML syntax error"), "{e}");
        let Err(HardwareError::File(e)) = load_hardware("absent.toml", &dir) else {
            panic!("expected a file error")
        };
        assert!(e.message.starts_with("cannot read: "), "{e}");
        let Err(HardwareError::File(e)) = load_hardware("/dev/null/x.toml", &dir) else {
            panic!("expected a file error")
        };
        assert!(e.message.starts_with("cannot read: "), "{e}");
        std::fs::create_dir_all(dir.join("d.toml")).unwrap();
        let Err(HardwareError::File(e)) = load_hardware("d.toml", &dir) else {
            panic!("expected a file error")
        };
        assert!(e.message.contains("no regular file"), "{e}");
        let Err(HardwareError::Unknown(m)) = load_hardware("vax", &dir) else {
            panic!("expected an unknown name")
        };
        assert!(m.contains("x86-server, arm64-altra"), "{m}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
