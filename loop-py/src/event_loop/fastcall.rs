//! `call_soon`, `call_soon_threadsafe`, `call_later`, `call_at`,
//! and `create_task` as `METH_FASTCALL | METH_KEYWORDS` methods, `get_debug`
//! as a `METH_NOARGS` one.
//!
//! They run for every task step, future callback and task. PyO3's generated
//! wrappers for a `(callback, *args, context=None)` signature build a tuple
//! for `*args` and walk a generic parameter description on every call
//! (about an eighth of `call_soon_chain`'s instructions, callgrind); here
//! the arguments are read in place from the vectorcall array and a
//! callback's zero or one argument is kept without a tuple (`CallArgs`).
//! The methods are installed on the type at module init as ordinary
//! method descriptors, with text signatures for `inspect.signature`.
//!
//! One `call_soon` (parsing, the handle, the push) and one `create_task`
//! each compile to one function: their parts are `#[inline(always)]`.
//! Between two calls the interpreter's code evicts the loop's from the
//! instruction cache, so a call costs a miss per cache line it touches, and
//! a chain of small functions touches more lines (calls, prologues, the
//! moves of their arguments) than the one function it inlines into
//! (`docs/decisions.md`, "The hot paths as one function each").

use super::{number_arg, Loop};
use crate::call_args::CallArgs;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString, PyTuple};
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, Ordering};

/// A method's leading parameters (before `*args`), for argument errors.
struct Spec<const N: usize> {
    name: &'static str,
    leading: [&'static str; N],
}

/// The parsed arguments of one call, borrowed from the vectorcall array.
struct Call<'a, 'py, const N: usize> {
    leading: [&'a Bound<'py, PyAny>; N],
    rest: &'a [*mut ffi::PyObject],
    context: Option<&'a Bound<'py, PyAny>>,
}

impl<const N: usize> Spec<N> {
    /// `name(leading…, *args, context=None)`: positional arguments fill the
    /// leading parameters then `*args`; keywords may name a leading
    /// parameter not given positionally, or `context`.
    ///
    /// # Safety
    /// `args` holds `nargs` positional objects followed by one value per
    /// entry of `kwnames` (a tuple of str, or NULL), all live for the call.
    #[inline(always)]
    unsafe fn parse<'a, 'py>(
        &self,
        py: Python<'py>,
        args: &'a [*mut ffi::PyObject],
        nargs: usize,
        kwnames: Option<&'a Bound<'py, PyTuple>>,
    ) -> PyResult<Call<'a, 'py, N>> {
        // SAFETY: the caller promises live objects.
        let arg = |ptr: &'a *mut ffi::PyObject| unsafe { Bound::ref_from_ptr(py, ptr) };
        let (positional, values) = args.split_at(nargs);
        let mut leading: [Option<&'a Bound<'py, PyAny>>; N] = [None; N];
        for (slot, ptr) in leading.iter_mut().zip(positional) {
            *slot = Some(arg(ptr));
        }
        let mut context = None;
        if let Some(names) = kwnames {
            if is_context_only(names) {
                // A one-name tuple comes with exactly one keyword value.
                context = values.first().map(arg);
            } else {
                self.parse_keywords(names, values, &mut leading, &mut context)?;
            }
        }
        let Some(leading) = all_given(leading) else {
            return Err(self.missing(&leading));
        };
        let rest = positional.get(N..).unwrap_or(&[]);
        // `context=None` means "copy the current context", as asyncio.
        let context = context.filter(|c| !c.is_none());
        Ok(Call {
            leading,
            rest,
            context,
        })
    }
}

impl<const N: usize> Spec<N> {
    /// Keywords other than the one `("context",)` tuple asyncio's C code
    /// passes (see [`is_context_only`]).
    #[inline(never)]
    fn parse_keywords<'a, 'py>(
        &self,
        names: &Bound<'py, PyTuple>,
        values: &'a [*mut ffi::PyObject],
        leading: &mut [Option<&'a Bound<'py, PyAny>>; N],
        context: &mut Option<&'a Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        let py = names.py();
        // SAFETY: the caller's values are live objects borrowed for the call.
        let arg = |ptr: &'a *mut ffi::PyObject| unsafe { Bound::ref_from_ptr(py, ptr) };
        for (i, value) in values.iter().enumerate() {
            let name = names.get_borrowed_item(i)?;
            // Python callers pass the interned name: a pointer compare
            // before any string work.
            if name.as_ptr() == intern!(py, "context").as_ptr() {
                *context = Some(arg(value));
                continue;
            }
            match self.keyword_slot(&name)? {
                None => *context = Some(arg(value)),
                Some(at) if leading[at].is_some() => return Err(self.given_twice(at)),
                Some(at) => leading[at] = Some(arg(value)),
            }
        }
        // Only a tuple with a non-interned name (C callers') is worth
        // remembering: Python callers' names match by pointer above.
        if values.len() == 1 && context.is_some() {
            let name = names.get_borrowed_item(0)?;
            if name.as_ptr() != intern!(py, "context").as_ptr() {
                remember_context_only(names);
            }
        }
        Ok(())
    }

    /// Which parameter a keyword other than the interned `context` names:
    /// `None` for `context` (a non-interned equal string), else the index
    /// of a leading parameter. Out of line: callers pass leading
    /// parameters positionally.
    #[cold]
    #[inline(never)]
    fn keyword_slot(&self, name: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let name = name.cast::<PyString>()?;
        let name = name.to_str()?;
        if name == "context" {
            return Ok(None);
        }
        match self.leading.iter().position(|p| *p == name) {
            Some(at) => Ok(Some(at)),
            None => Err(PyTypeError::new_err(format!(
                "{}() got an unexpected keyword argument '{name}'",
                self.name
            ))),
        }
    }

    #[cold]
    #[inline(never)]
    fn given_twice(&self, at: usize) -> PyErr {
        PyTypeError::new_err(format!(
            "{}() got multiple values for argument '{}'",
            self.name, self.leading[at]
        ))
    }

    /// Python's error for leading parameters given neither way.
    #[cold]
    #[inline(never)]
    fn missing(&self, given: &[Option<&Bound<'_, PyAny>>; N]) -> PyErr {
        let missing: Vec<String> = self
            .leading
            .iter()
            .zip(given)
            .filter(|(_, v)| v.is_none())
            .map(|(p, _)| format!("'{p}'"))
            .collect();
        PyTypeError::new_err(format!(
            "{}() missing {} required positional argument{}: {}",
            self.name,
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            missing.join(" and ")
        ))
    }
}

/// The keyword-names tuple `("context",)` that asyncio's C `Task` and
/// `Future` pass on every `call_soon`: one tuple object made at module
/// init, holding a `"context"` string that is not the interned one, so it
/// would otherwise take the string comparison of [`Spec::keyword_slot`]
/// every time. The last such tuple seen is remembered, with a strong
/// reference so that its address cannot be reused by another object while
/// remembered, and recognised by pointer. A caller that builds a new tuple
/// per call (`**{"context": ctx}` with a computed key) replaces it; the
/// next C call takes it back.
static CONTEXT_ONLY: AtomicPtr<ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());

#[inline]
fn is_context_only(names: &Bound<'_, PyTuple>) -> bool {
    names.as_ptr() == CONTEXT_ONLY.load(Ordering::Relaxed)
}

/// Remember `names`, a tuple of the one name `context`, for
/// [`is_context_only`] in place of the tuple remembered before.
#[cold]
fn remember_context_only(names: &Bound<'_, PyTuple>) {
    let old = CONTEXT_ONLY.swap(names.clone().unbind().into_ptr(), Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: `old` is the strong reference an earlier call stored; a
        // tuple of str frees without running Python code.
        unsafe { ffi::Py_DECREF(old) };
    }
}

/// `Some` of every value when none is missing.
fn all_given<T: Copy, const N: usize>(values: [Option<T>; N]) -> Option<[T; N]> {
    let filler = values.iter().flatten().next().copied()?;
    let mut out = [filler; N];
    for (slot, value) in out.iter_mut().zip(values) {
        *slot = value?;
    }
    Some(out)
}

/// A call's arguments as vectorcall passes them: `nargs` positional
/// objects, then one value per entry of `kwnames`.
struct RawArgs<'a, 'py> {
    args: &'a [*mut ffi::PyObject],
    nargs: usize,
    kwnames: Option<&'a Bound<'py, PyTuple>>,
}

/// The C entry shared by the fastcall methods: run `body` on the raw
/// arguments, turn its result (or a Rust panic) into what CPython expects.
///
/// # Safety
/// Called by CPython as a `METH_FASTCALL | METH_KEYWORDS` method of `Loop`:
/// `slf` is a `Loop` (the method descriptor checks it), `args`/`nargs`/
/// `kwnames` follow the vectorcall convention, and the GIL is held.
unsafe fn entry(
    method: &'static str,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
    body: impl for<'a, 'py> FnOnce(&Bound<'py, Loop>, RawArgs<'a, 'py>) -> PyResult<Py<PyAny>>,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods with the GIL held (attached thread).
    let py = unsafe { Python::assume_attached() };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `slf` is a live `Loop` instance (checked by the method
        // descriptor before the call), borrowed for the call.
        let this = unsafe { Bound::ref_from_ptr(py, &slf).cast_unchecked::<Loop>() };
        // SAFETY: `kwnames` is NULL or a tuple of str (vectorcall).
        let kwnames = (!kwnames.is_null())
            .then(|| unsafe { Bound::ref_from_ptr(py, &kwnames).cast_unchecked::<PyTuple>() });
        let nargs = ffi::PyVectorcall_NARGS(nargsf as usize) as usize;
        let total = nargs + kwnames.map_or(0, |k| k.len());
        let args: &[*mut ffi::PyObject] = if total == 0 {
            &[]
        } else {
            // SAFETY: the vectorcall array holds `nargs` positional then one
            // value per keyword name, all live for the call.
            unsafe { std::slice::from_raw_parts(args, total) }
        };
        body(
            this,
            RawArgs {
                args,
                nargs,
                kwnames,
            },
        )
    }));
    let result = outcome.unwrap_or_else(|panic| Err(panicked(method, panic)));
    match result {
        Ok(obj) => obj.into_ptr(),
        Err(err) => {
            err.restore(py);
            std::ptr::null_mut()
        }
    }
}

#[cold]
#[inline(never)]
fn panicked(method: &str, panic: Box<dyn std::any::Any + Send>) -> PyErr {
    PyRuntimeError::new_err(format!(
        "ferroloop internal error (Rust panic in {method}): {}",
        super::tick::panic_message(panic.as_ref())
    ))
}

const CALL_SOON: Spec<1> = Spec {
    name: "call_soon",
    leading: ["callback"],
};
const CALL_SOON_THREADSAFE: Spec<1> = Spec {
    name: "call_soon_threadsafe",
    leading: ["callback"],
};
const CALL_LATER: Spec<2> = Spec {
    name: "call_later",
    leading: ["delay", "callback"],
};
const CALL_AT: Spec<2> = Spec {
    name: "call_at",
    leading: ["when", "callback"],
};

/// The positional arguments after the leading ones, as a handle keeps them.
#[inline(always)]
fn call_args(py: Python<'_>, rest: &[*mut ffi::PyObject]) -> PyResult<CallArgs> {
    // SAFETY: `rest` is a sub-slice of a vectorcall array (see `Call`).
    unsafe { CallArgs::from_vector(py, rest) }
}

/// A `PyCFunctionFastWithKeywords` named `$name` (`$method` in errors)
/// that runs `$body` on the call's raw arguments (see [`entry`]).
macro_rules! fastcall_entry {
    ($name:ident, $method:expr, |$this:ident, $raw:ident| $body:block) => {
        unsafe extern "C" fn $name(
            slf: *mut ffi::PyObject,
            args: *const *mut ffi::PyObject,
            nargsf: ffi::Py_ssize_t,
            kwnames: *mut ffi::PyObject,
        ) -> *mut ffi::PyObject {
            // SAFETY: called by CPython as the method it is installed as.
            unsafe { entry($method, slf, args, nargsf, kwnames, |$this, $raw| $body) }
        }
    };
}

/// A fastcall method with a `(leading…, *args, context=None)` signature,
/// parsed with `$spec`.
macro_rules! fastcall_method {
    ($name:ident, $spec:expr, |$this:ident, $call:ident| $body:block) => {
        fastcall_entry!($name, $spec.name, |$this, raw| {
            // SAFETY: `entry` passes the vectorcall array as is (the body
            // runs inside `fastcall_entry`'s unsafe block).
            let $call = $spec.parse($this.py(), raw.args, raw.nargs, raw.kwnames)?;
            $body
        });
    };
}

fastcall_method!(call_soon, CALL_SOON, |this, call| {
    let [callback] = call.leading;
    let args = call_args(this.py(), call.rest)?;
    Loop::call_soon(this, callback.clone(), args, call.context.cloned()).map(Py::into_any)
});

fastcall_method!(call_soon_threadsafe, CALL_SOON_THREADSAFE, |this, call| {
    let [callback] = call.leading;
    let args = call_args(this.py(), call.rest)?;
    Loop::call_soon_threadsafe(this, callback.clone(), args, call.context.cloned())
        .map(Py::into_any)
});

fastcall_method!(call_later, CALL_LATER, |this, call| {
    let [delay, callback] = call.leading;
    if delay.is_none() {
        return Err(PyTypeError::new_err("delay must not be None"));
    }
    let when = loop_core::clock::monotonic() + number_arg(delay, "delay")?;
    let args = call_args(this.py(), call.rest)?;
    let context = call.context.cloned();
    Loop::new_timer(this, when, callback.clone(), args, context, "call_later").map(Py::into_any)
});

fastcall_method!(call_at, CALL_AT, |this, call| {
    let [when, callback] = call.leading;
    if when.is_none() {
        return Err(PyTypeError::new_err("when cannot be None"));
    }
    let when = number_arg(when, "when")?;
    let args = call_args(this.py(), call.rest)?;
    let context = call.context.cloned();
    Loop::new_timer(this, when, callback.clone(), args, context, "call_at").map(Py::into_any)
});

// `create_task(coro, *, name=None, context=None)`: one call per task,
// parsed in place like the four above rather than by PyO3's generic
// parameter description.
fastcall_entry!(create_task, "create_task", |this, raw| {
    let [coro, name, context] = match (raw.args, raw.kwnames) {
        // The usual call, `create_task(coro)`. SAFETY: its one argument is
        // a live object (the body runs inside `fastcall_entry`'s unsafe
        // block).
        ([coro], None) => [Some(Bound::ref_from_ptr(this.py(), coro)), None, None],
        _ => task_arguments(this.py(), raw)?,
    };
    let Some(coro) = coro else {
        return Err(PyTypeError::new_err(
            "create_task() missing 1 required positional argument: 'coro'",
        ));
    };
    Loop::create_task(this, coro, name, context).map(Bound::unbind)
});

/// `get_debug()`: asyncio's C `Future` asks it of its loop for every future
/// and task it makes; PyO3's wrapper costs more than the answer, so it is
/// a `METH_NOARGS` method (CPython checks that no argument is given).
unsafe extern "C" fn get_debug(
    slf: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods with the GIL held (attached thread).
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `slf` is a live `Loop` instance (checked by the method
    // descriptor before the call), borrowed for the call.
    let this = unsafe { Bound::ref_from_ptr(py, &slf).cast_unchecked::<Loop>() };
    PyBool::new(py, this.get().is_debug()).to_owned().into_ptr()
}

/// `create_task`'s parameters, in the order [`task_arguments`] returns them.
const TASK_PARAMETERS: [&str; 3] = ["coro", "name", "context"];

/// `[coro, name, context]` as given (positionally only `coro`).
#[inline(never)]
fn task_arguments<'a, 'py>(
    py: Python<'py>,
    raw: RawArgs<'a, 'py>,
) -> PyResult<[Option<&'a Bound<'py, PyAny>>; 3]> {
    // SAFETY: `raw` is the vectorcall array of the call in progress.
    let arg = |ptr: &'a *mut ffi::PyObject| unsafe { Bound::ref_from_ptr(py, ptr) };
    let (positional, values) = raw.args.split_at(raw.nargs);
    if positional.len() > 1 {
        return Err(PyTypeError::new_err(format!(
            "create_task() takes 2 positional arguments but {} were given",
            positional.len() + 1
        )));
    }
    let mut given = [positional.first().map(arg), None, None];
    if let Some(names) = raw.kwnames {
        for (i, value) in values.iter().enumerate() {
            let key = names.get_borrowed_item(i)?;
            let at = task_keyword(&key)?;
            if given[at].is_some() {
                return Err(PyTypeError::new_err(format!(
                    "create_task() got multiple values for argument '{}'",
                    TASK_PARAMETERS[at]
                )));
            }
            given[at] = Some(arg(value));
        }
    }
    Ok(given)
}

/// Which of [`TASK_PARAMETERS`] a keyword names (interned names by pointer).
fn task_keyword(key: &Bound<'_, PyAny>) -> PyResult<usize> {
    let py = key.py();
    if key.as_ptr() == intern!(py, "name").as_ptr() {
        return Ok(1);
    }
    if key.as_ptr() == intern!(py, "context").as_ptr() {
        return Ok(2);
    }
    let key = key.cast::<PyString>()?.to_str()?;
    TASK_PARAMETERS
        .iter()
        .position(|p| *p == key)
        .ok_or_else(|| {
            PyTypeError::new_err(format!(
                "create_task() got an unexpected keyword argument '{key}'"
            ))
        })
}

/// The method table. CPython keeps a pointer to each entry for as long as
/// the descriptor lives, so it is static.
struct MethodDefs([ffi::PyMethodDef; 6]);

// SAFETY: the table is never written after initialisation (CPython only
// reads method definitions); its pointers are to static C strings and
// functions.
unsafe impl Sync for MethodDefs {}

const fn def(
    name: &'static CStr,
    meth: ffi::PyCFunctionFastWithKeywords,
    doc: &'static CStr,
) -> ffi::PyMethodDef {
    ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: meth,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: doc.as_ptr(),
    }
}

const fn def_noargs(
    name: &'static CStr,
    meth: ffi::PyCFunction,
    doc: &'static CStr,
) -> ffi::PyMethodDef {
    ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: meth },
        ml_flags: ffi::METH_NOARGS,
        ml_doc: doc.as_ptr(),
    }
}

static METHODS: MethodDefs = MethodDefs([
    def(
        c"call_soon",
        call_soon,
        c"call_soon($self, callback, *args, context=None)\n--\n\nArrange for callback(*args) to be called soon, in `context` (default: a copy of the current context).",
    ),
    def(
        c"call_soon_threadsafe",
        call_soon_threadsafe,
        c"call_soon_threadsafe($self, callback, *args, context=None)\n--\n\nLike call_soon(), from any thread: wakes the loop.",
    ),
    def(
        c"call_later",
        call_later,
        c"call_later($self, delay, callback, *args, context=None)\n--\n\nArrange for callback(*args) to be called after `delay` seconds.",
    ),
    def(
        c"call_at",
        call_at,
        c"call_at($self, when, callback, *args, context=None)\n--\n\nArrange for callback(*args) to be called at loop time `when`.",
    ),
    def(
        c"create_task",
        create_task,
        c"create_task($self, coro, *, name=None, context=None)\n--\n\nSchedule a coroutine object: return an asyncio.Task (or what the task factory makes).",
    ),
    def_noargs(
        c"get_debug",
        get_debug,
        c"get_debug($self, /)\n--\n\nWhether the loop is in debug mode.",
    ),
]);

/// Put the methods on the `Loop` type (once, at module init).
pub(crate) fn install(py: Python<'_>) -> PyResult<()> {
    let ty = py.get_type::<Loop>();
    for def in &METHODS.0 {
        // SAFETY: `def` is a static, fully initialised method definition
        // CPython only reads; the type is a live type object; the result is
        // a new reference or NULL with an exception set.
        let descr = unsafe {
            let raw = ffi::PyDescr_NewMethod(
                ty.as_type_ptr(),
                (def as *const ffi::PyMethodDef).cast_mut(),
            );
            Bound::from_owned_ptr_or_err(py, raw)?
        };
        // SAFETY: `ml_name` is one of the static C strings above.
        let name = unsafe { CStr::from_ptr(def.ml_name as *const c_char) };
        ty.setattr(name.to_string_lossy().as_ref(), descr)?;
    }
    Ok(())
}
