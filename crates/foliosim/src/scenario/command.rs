//! A task's `command`: a real program that `foliosim kernel-run` and `validate` run on the live
//! kernel in the task's cgroup, instead of the kernel-bench program of its generator or ops.
//! The simulator never runs it: a task with a command is simulated by its `trace` (recorded from
//! the same command), and a task with a command alone is played live only.
//!
//! Keys of a `[[task]]`: `command` (argv, a non-empty array of strings), `env` (a table of
//! variables set on top of foliosim's own environment) and `cwd` (the directory it starts in).
//! A relative `cwd` is resolved against the scenario file's folder (as a task's `trace` is);
//! relative paths in `command` are the program's business: they resolve from `cwd`, or from the
//! directory foliosim was started in when the task names none.

use std::path::Path;

use toml::Value;

use super::walker::{describe, Node, Res};

/// The keys a task's command takes.
pub(crate) const COMMAND_KEYS: &[&str] = &["command", "env", "cwd"];

/// A real program to run live: `argv[0]` is looked up on PATH as a shell's `exec` does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveCommand {
    pub argv: Vec<String>,
    /// Variables set (or replaced) in the environment it inherits, in name order.
    pub env: Vec<(String, String)>,
    /// The directory it starts in (a relative `cwd` joined to the scenario's folder); None: the
    /// one foliosim runs in.
    pub cwd: Option<String>,
}

/// The task's `command`, `env` and `cwd`; None when it names no command (then `env` and `cwd`
/// are refused: they would do nothing).
pub(crate) fn parse_command(task: &Node) -> Res<Option<LiveCommand>> {
    let Some(items) = task.array_opt("command")? else {
        for key in ["env", "cwd"] {
            if task.table.contains_key(key) {
                return Err(task.err(
                    key,
                    "expected only beside a command = [\"program\", \"arg\", ...] (it sets up \
                     the command's start)",
                ));
            }
        }
        return Ok(None);
    };
    if items.is_empty() {
        return Err(task.err(
            "command",
            "expected the program and its arguments, e.g. [\"/usr/bin/sort\", \"in.txt\"], \
             found []",
        ));
    }
    let mut argv = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = format!("{}[{i}]", task.key("command"));
        match item {
            Value::String(s) if s.contains('\0') => {
                return Err(task.cx.err(&key, "expected a string without NUL bytes"))
            }
            Value::String(s) if i == 0 && s.is_empty() => {
                return Err(task.cx.err(&key, "expected a program name, found \"\""))
            }
            Value::String(s) => argv.push(s.clone()),
            v => {
                return Err(task
                    .cx
                    .err(&key, format!("expected a string, found {}", describe(v))))
            }
        }
    }
    let mut env = Vec::new();
    if let Some(table) = task.table_opt("env")? {
        for (name, value) in table {
            let key = format!("{}.{name}", task.key("env"));
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(task
                    .cx
                    .err(&key, "expected a variable name without '=' or NUL bytes"));
            }
            match value {
                Value::String(s) if !s.contains('\0') => env.push((name.clone(), s.clone())),
                v => {
                    return Err(task.cx.err(
                        &key,
                        format!("expected a string without NUL bytes, found {}", describe(v)),
                    ))
                }
            }
        }
    }
    let cwd = match task.str_opt("cwd")? {
        Some("") => return Err(task.err("cwd", "expected a directory, found \"\"")),
        Some(s) if s.contains('\0') => {
            return Err(task.err("cwd", "expected a directory without NUL bytes"))
        }
        // relative to the scenario's folder, as a task's trace is
        Some(dir) => Some(
            Path::new(task.cx.file)
                .parent()
                .unwrap_or(Path::new(""))
                .join(dir)
                .to_string_lossy()
                .into_owned(),
        ),
        None => None,
    };
    Ok(Some(LiveCommand { argv, env, cwd }))
}

#[cfg(test)]
mod tests {
    use super::super::parse::test_support::*;
    use super::*;
    use crate::scenario::{InputError, Program};

    const TASK: &str = "name = \"t\"\n[machine]\n[[machine.node]]\nmemory = \"1G\"\ncpus = 1\n\
                        [[cgroup]]\nname = \"g\"\n\"memory.max\" = \"100M\"\n[[task]]\nname = \"p\"\n\
                        cgroup = \"g\"\n";

    fn task(body: &str) -> Result<crate::scenario::TaskSpec, InputError> {
        parse(&format!("{TASK}{body}\n")).map(|s| s.tasks[0].clone())
    }

    fn task_err(body: &str, key: &str, needle: &str) {
        let e = task(body).expect_err("expected an error");
        assert_eq!(e.key, key, "{e}");
        assert!(e.message.contains(needle), "{e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }

    #[test]
    fn a_command_with_env_and_cwd() {
        let t = task(
            "command = [\"/usr/bin/sort\", \"-S\", \"8M\", \"in.txt\"]\n\
             env = { LC_ALL = \"C\", TMPDIR = \"/tmp/x\" }\ncwd = \"target/real\"",
        )
        .unwrap();
        assert_eq!(
            t.command,
            Some(LiveCommand {
                argv: vec![
                    "/usr/bin/sort".into(),
                    "-S".into(),
                    "8M".into(),
                    "in.txt".into()
                ],
                env: vec![
                    ("LC_ALL".into(), "C".into()),
                    ("TMPDIR".into(), "/tmp/x".into())
                ],
                cwd: Some("target/real".into()),
            })
        );
        // nothing to simulate: the task is played live only
        assert_eq!(t.program, Program::LiveOnly);
    }

    #[test]
    fn a_relative_cwd_is_in_the_scenarios_folder() {
        let cwd = |dir: &str| {
            let text = format!("{TASK}command = [\"true\"]\ncwd = \"{dir}\"\n");
            crate::Scenario::parse_str(&text, "scenarios/real/s.toml")
                .unwrap()
                .tasks[0]
                .command
                .clone()
                .unwrap()
                .cwd
        };
        assert_eq!(
            cwd("../../target/real"),
            Some("scenarios/real/../../target/real".into())
        );
        assert_eq!(cwd("/tmp"), Some("/tmp".into()));
    }

    #[test]
    fn a_command_beside_ops_keeps_both() {
        let t = task(
            "command = [\"true\"]\nops = [ { op = \"mmap\", region = \"a\", size = \"4K\" } ]",
        )
        .unwrap();
        assert_eq!(t.command.unwrap().argv, vec!["true"]);
        assert!(matches!(t.program, Program::Ops(_)));
        // a task without a command has none
        assert_eq!(
            task("generator = \"usemem\"\nsize = \"1M\"")
                .unwrap()
                .command,
            None
        );
    }

    #[test]
    fn bad_commands_name_the_key() {
        task_err("command = []", "task[0].command", "found []");
        task_err(
            "command = \"ls -l\"",
            "task[0].command",
            "expected an array",
        );
        task_err("command = [\"ls\", 3]", "task[0].command[1]", "found 3");
        task_err("command = [\"\"]", "task[0].command[0]", "program name");
        task_err("command = [\"a\\u0000b\"]", "task[0].command[0]", "NUL");
        task_err(
            "command = [\"ls\"]\nenv = 3",
            "task[0].env",
            "expected a table",
        );
        task_err(
            "command = [\"ls\"]\nenv = { A = 1 }",
            "task[0].env.A",
            "found 1",
        );
        task_err(
            "command = [\"ls\"]\nenv = { \"A=B\" = \"x\" }",
            "task[0].env.A=B",
            "'='",
        );
        task_err("command = [\"ls\"]\ncwd = \"\"", "task[0].cwd", "directory");
        task_err(
            "command = [\"ls\"]\ncwd = 1",
            "task[0].cwd",
            "expected a string",
        );
        task_err(
            "env = { A = \"x\" }\nops = []",
            "task[0].env",
            "beside a command",
        );
        task_err("cwd = \"/\"\nops = []", "task[0].cwd", "beside a command");
        task_err("comand = [\"ls\"]", "task[0].comand", "unknown key");
        // neither a program to simulate nor a command: the message names all three
        task_err("", "task[0].generator", "command");
    }
}
