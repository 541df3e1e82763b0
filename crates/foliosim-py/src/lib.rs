//! `foliosim._native`: the engine as the Python package `foliosim` sees it. Thin on purpose: a
//! scenario is loaded, resolved and run by the same code as `foliosim run`, and a run's result
//! comes back as the CLI's `--json` document (stats/document.rs), which the Python side turns
//! into DataFrames (python/foliosim/).

use std::panic::{catch_unwind, AssertUnwindSafe};

use foliosim::scenario::parse;
use foliosim::{InputError as EngineInputError, RunError, RunResult, RunSpec, Scenario};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

// The CLI resolves a SCENARIO argument (a path, or a bundled scenario's name) here; the package
// shares the file rather than a copy of it.
#[allow(dead_code)]
#[path = "../../foliosim-cli/src/scenarios.rs"]
mod scenarios;

pyo3::create_exception!(
    foliosim,
    InputError,
    PyValueError,
    "Bad input: the CLI's one-line message; `file`, `key` and `message` are its parts."
);
pyo3::create_exception!(
    foliosim,
    CheckError,
    PyRuntimeError,
    "The invariant checker (check=True) found a broken invariant: a simulator bug."
);

/// The Python exception for an input error, its text the line `foliosim` prints after
/// "foliosim: ".
fn input_error(e: &EngineInputError) -> PyErr {
    let err = InputError::new_err(cli_line(&e.to_string()));
    Python::attach(|py| {
        let value = err.value(py);
        let _ = value.setattr("file", &e.file);
        let _ = value.setattr("key", &e.key);
        let _ = value.setattr("message", &e.message);
    });
    err
}

/// The message on one line, long words shortened, as the CLI prints it.
fn cli_line(text: &str) -> String {
    use foliosim::scenario::message::{one_line, shorten_long_words};
    shorten_long_words(&one_line(text))
}

/// A checked scenario and the TOML text it was parsed from (kept to re-parse it with generator
/// arguments changed, and to send it to other processes).
#[pyclass(module = "foliosim._native", frozen)]
struct NativeScenario {
    scenario: Scenario,
    text: String,
}

#[pymethods]
impl NativeScenario {
    /// A scenario file, or a bundled scenario's name, as `foliosim run SCENARIO` finds it.
    #[staticmethod]
    fn load(argument: &str) -> PyResult<Self> {
        let path = scenarios::find("run", argument).map_err(|e| input_error(&e))?;
        let scenario = Scenario::load(&path).map_err(|e| input_error(&e))?;
        // load read it already: a failure here is a file changed in between
        let text = std::fs::read_to_string(&path).map_err(|e| {
            PyRuntimeError::new_err(format!("{}: cannot read it again: {e}", path.display()))
        })?;
        Ok(NativeScenario { scenario, text })
    }

    /// Scenario TOML text; `file` names it in errors.
    #[staticmethod]
    fn parse(text: &str, file: &str) -> PyResult<Self> {
        let scenario = Scenario::parse_str(text, file).map_err(|e| input_error(&e))?;
        Ok(NativeScenario {
            scenario,
            text: text.to_string(),
        })
    }

    /// A dict in the TOML's shape (str, int, float, bool, lists and dicts of them).
    #[staticmethod]
    fn from_dict(table: &Bound<'_, PyDict>, file: &str) -> PyResult<Self> {
        let table = toml_table(table, "")?;
        let text = toml::to_string(&table).map_err(|e| {
            input_error(&EngineInputError {
                file: file.into(),
                key: String::new(),
                message: format!("expected a table TOML can hold: {e}"),
            })
        })?;
        Self::parse(&text, file)
    }

    /// The scenario with `args` (generator parameter -> value) set in every generator task, as
    /// if written in the file.
    fn with_args(&self, args: &Bound<'_, PyDict>) -> PyResult<Self> {
        let args = toml_table(args, "args.")?;
        let mut table: toml::Table = self.text.parse().map_err(|e: toml::de::Error| {
            PyRuntimeError::new_err(format!("{}: {}", self.scenario.file, e.message()))
        })?;
        if let Some(toml::Value::Array(tasks)) = table.get_mut("task") {
            for task in tasks.iter_mut().filter_map(toml::Value::as_table_mut) {
                if task.contains_key("generator") {
                    task.extend(args.clone());
                }
            }
        }
        let text = toml::to_string(&table).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Self::parse(&text, &self.scenario.file)
    }

    #[getter]
    fn name(&self) -> &str {
        &self.scenario.name
    }
    #[getter]
    fn file(&self) -> &str {
        &self.scenario.file
    }
    #[getter]
    fn description(&self) -> &str {
        &self.scenario.description
    }
    #[getter]
    fn text(&self) -> &str {
        &self.text
    }
    #[getter]
    fn profiles(&self) -> Vec<String> {
        self.scenario.profiles.clone()
    }
    #[getter]
    fn variants(&self) -> Vec<String> {
        self.scenario
            .variants
            .iter()
            .map(|v| v.name.clone())
            .collect()
    }

    /// Runs every profile x variant (the scenario's own when None) with the `PATH=VALUE`
    /// overrides, as `foliosim run` does, on up to `threads` threads, without the GIL; on the
    /// hardware profile `hardware` names (a bundled name or a .toml file) if given.
    /// Returns the `--json` document (without its final newline).
    #[pyo3(signature = (profiles, variants, sets, seed, check=false, threads=None, hardware=None))]
    fn run(
        &self,
        py: Python<'_>,
        profiles: Option<Vec<String>>,
        variants: Option<Vec<String>>,
        sets: Vec<String>,
        seed: u64,
        check: bool,
        threads: Option<usize>,
        hardware: Option<String>,
    ) -> PyResult<String> {
        let mut scenario = self.scenario.clone();
        if let Some(hardware) = &hardware {
            scenario
                .set_hardware(hardware)
                .map_err(|e| input_error(&e))?;
        }
        let scenario = &scenario;
        let specs = resolve_all(scenario, profiles, variants, &sets, seed, check)
            .map_err(|e| input_error(&e))?;
        let outcome = py.detach(|| {
            catch_unwind(AssertUnwindSafe(|| run_all(scenario, &specs, threads)))
                .unwrap_or_else(|panic| Err(Stop::Panic(panic_text(&*panic))))
        });
        let runs = match outcome {
            Ok(runs) => runs,
            Err(Stop::Input(e)) => return Err(input_error(&e)),
            Err(Stop::Check(m)) => return Err(CheckError::new_err(m)),
            Err(Stop::Panic(m)) => {
                return Err(PyRuntimeError::new_err(format!(
                    "foliosim panicked (a simulator bug): {m}"
                )))
            }
        };
        foliosim::stats::document::document(scenario, &runs)
            .map_err(|m| PyRuntimeError::new_err(format!("cannot encode JSON: {m}")))
    }
}

/// The specs of `foliosim run`: each profile x variant, with the same checks and messages.
fn resolve_all(
    scenario: &Scenario,
    profiles: Option<Vec<String>>,
    variants: Option<Vec<String>>,
    sets: &[String],
    seed: u64,
    check: bool,
) -> Result<Vec<RunSpec>, EngineInputError> {
    let profiles = match profiles {
        None => scenario.profiles.clone(),
        Some(p) => once_each(p, "--profile")?,
    };
    let variants: Vec<Option<String>> = match variants {
        Some(v) => once_each(v, "--variant")?.into_iter().map(Some).collect(),
        None if scenario.variants.is_empty() => vec![None],
        None => scenario
            .variants
            .iter()
            .map(|v| Some(v.name.clone()))
            .collect(),
    };
    let sets = sets
        .iter()
        .map(|s| parse::parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut specs = Vec::new();
    for profile in &profiles {
        for variant in &variants {
            specs.push(parse::resolve(
                scenario,
                profile,
                variant.as_deref(),
                &sets,
                seed,
                check,
            )?);
        }
    }
    Ok(specs)
}

/// The values of a repeatable flag, refusing repeats, with the CLI's message.
fn once_each(values: Vec<String>, flag: &str) -> Result<Vec<String>, EngineInputError> {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if seen.contains(&v) {
            return Err(EngineInputError {
                file: flag.to_string(),
                key: v,
                message: "expected each value once, found it twice".into(),
            });
        }
        seen.push(v);
    }
    Ok(seen)
}

enum Stop {
    Input(EngineInputError),
    Check(String),
    Panic(String),
}

/// Runs the specs on up to `threads` threads (default: every core); results keep the specs'
/// order, and each run is deterministic on its own.
fn run_all(
    scenario: &Scenario,
    specs: &[RunSpec],
    threads: Option<usize>,
) -> Result<Vec<RunResult>, Stop> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let workers = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, specs.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<RunResult, RunError>>>> =
        specs.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = specs.get(index) else {
                    break;
                };
                let result = foliosim::run(spec, &mut |_| {});
                *results[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            });
        }
    });
    let mut runs = Vec::with_capacity(specs.len());
    for (spec, result) in specs.iter().zip(results) {
        match result.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(r)) => runs.push(r),
            Some(Err(RunError::Input(e))) => return Err(Stop::Input(e)),
            Some(Err(e @ (RunError::Check(_) | RunError::BudgetExceeded { .. }))) => {
                let label = match &spec.variant {
                    Some(v) => format!("{} {}/{v}", scenario.name, spec.profile.name),
                    None => format!("{} {}", scenario.name, spec.profile.name),
                };
                return Err(Stop::Check(format!(
                    "{}: {label} seed {}: {e}",
                    scenario.file, spec.seed
                )));
            }
            // a worker that panicked left its slot empty; the scope re-raised the panic already
            None => return Err(Stop::Panic("a run did not finish".into())),
        }
    }
    Ok(runs)
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// A Python dict as a TOML table; `prefix` starts the key path in errors.
fn toml_table(dict: &Bound<'_, PyDict>, prefix: &str) -> PyResult<toml::Table> {
    let mut table = toml::Table::new();
    for (key, value) in dict.iter() {
        let key: String = key.extract().map_err(|_| {
            PyTypeError::new_err(format!("{prefix}: expected str keys, found {key}"))
        })?;
        let path = format!("{prefix}{key}");
        table.insert(key, toml_value(&value, &path)?);
    }
    Ok(table)
}

fn toml_value(value: &Bound<'_, PyAny>, path: &str) -> PyResult<toml::Value> {
    // bool before int: Python's bool is an int
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(toml::Value::Boolean(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        let i: i64 = value.extract().map_err(|_| {
            PyValueError::new_err(format!("{path}: expected an integer TOML can hold"))
        })?;
        return Ok(toml::Value::Integer(i));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Ok(toml::Value::Float(f.value()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(toml::Value::String(s.extract::<String>()?));
    }
    if let Ok(d) = value.cast::<PyDict>() {
        return Ok(toml::Value::Table(toml_table(d, &format!("{path}."))?));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let items = value
            .try_iter()?
            .enumerate()
            .map(|(i, item)| toml_value(&item?, &format!("{path}[{i}]")))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(toml::Value::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "{path}: expected str, int, float, bool, list or dict, found {}",
        value.get_type().name()?
    )))
}

/// The HTML report of a result document (`foliosim report`'s page), without the GIL.
#[pyfunction]
fn render_report(py: Python<'_>, result_json: &str) -> PyResult<String> {
    py.detach(|| {
        catch_unwind(|| foliosim_report::render_html(result_json))
            .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_text(&*panic))))
    })
    .map_err(|m| PyRuntimeError::new_err(format!("report: {m}")))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeScenario>()?;
    m.add_function(wrap_pyfunction!(render_report, m)?)?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("CheckError", m.py().get_type::<CheckError>())?;
    m.add("VERSION", foliosim::VERSION)?;
    Ok(())
}
