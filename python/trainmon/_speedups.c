/* SPDX-License-Identifier: Apache-2.0
 *
 * trainmon._speedups: an optional C version of the loader's hot path (issue 17). Python stays the
 * source of truth: TimedIterator.__next__ below does exactly what _timing._TimedIterator.__next__
 * does, reading the same module globals of _timing at every call (_tls, _mono, _journal_append,
 * _journal, _Tensor, _tensor_len, fast_samples, _timer, J_BATCH, LOOP, _JOURNAL_CAP), so that
 * whatever changes them (_learn_torch, tests patching the clock) changes both alike. _timing uses
 * it when this module imports and its VERSION is the one _timing expects (_SPEEDUPS_VERSION), and
 * TRAINMON_NO_SPEEDUPS is not set (docs/python.md, "Speedups").
 *
 * What is faster than the Python method: no Python frame; the _Hot object's slots read and written
 * at their offsets (when the object is exactly _Hot and the type unchanged since configure());
 * time.monotonic's clock read directly (clock_gettime(CLOCK_MONOTONIC), the same value as
 * time.monotonic() computes) while _timing._mono is still time.monotonic; the wrapped iterator's
 * tp_iternext called directly; the journal tuple appended with PyList_Append while
 * _journal_append is still the bound append of the list configure() saw.
 *
 * Errors: as in the Python method. Before the timed next() and when setting depth, an error
 * propagates; the wrapped iterator's exceptions propagate unchanged; after the batch, an
 * Exception is swallowed (the batch is returned), a BaseException that is not an Exception
 * (KeyboardInterrupt) propagates. GIL held throughout; no static mutable state (module state
 * only). CPython 3.11 C API (the interpreter of Debian 12's python3).
 *
 * trainmon.step's fast path is not here: a C version (a vectorcall object; branch history, commit
 * 52ddf7a) cost about 540 instructions per step MORE than the Python path under callgrind (a loader
 * + step loop: 13,902 against 13,364 Ir per step), its Monitor attribute reads through
 * PyObject_GetAttr costing more than CPython 3.11's specialised bytecode for the same reads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <string.h>
#include <time.h>

/* _timing checks it: bump it with every change of what configure() takes or of the semantics. */
#define SPEEDUPS_VERSION 3

enum { F_DEPTH, F_LEVEL, F_PHASE, F_PHASE_MT, F_COUNT };
static const char *const kFieldNames[F_COUNT] = {"depth", "level", "phase", "phase_mt"};

enum {
  S_TLS, S_MONO, S_JOURNAL_APPEND, S_JOURNAL, S_TENSOR, S_TENSOR_LEN, S_FAST_SAMPLES, S_TIMER,
  S_J_BATCH, S_LOOP, S_CAP, S_DATA, S_COMPUTE, S_LOADER_STOP, S_DRAIN, S_COUNT
};
static const char *const kStrings[S_COUNT] = {
    "_tls", "_mono", "_journal_append", "_journal", "_Tensor", "_tensor_len", "fast_samples",
    "_timer", "J_BATCH", "LOOP", "_JOURNAL_CAP", "data", "compute", "loader_stop", "drain"};

typedef struct {
  PyObject *iter_type;       /* TimedIterator */
  PyObject *globals;         /* _timing's globals (NULL before configure(): next() raises) */
  PyObject *hot_type;        /* _timing._Hot */
  unsigned int hot_tag;      /* its tp_version_tag at configure() (0: slots not read directly) */
  Py_ssize_t offsets[F_COUNT];
  PyObject *monotonic;       /* time.monotonic */
  PyObject *journal;         /* the list whose bound append configure() saw */
  PyObject *journal_append;  /* that bound append */
  PyObject *strings[S_COUNT];
  PyObject *field_names[F_COUNT];
  /* _timing's globals as last looked up (borrowed: valid while the dict is unchanged, which its
   * version tag tells; CPython < 3.12, where the tag is not deprecated) */
  uint64_t globals_tag;
  PyObject *cached[S_COUNT];
} State;

typedef struct {
  PyObject_HEAD
  PyObject *inner;
  PyObject *key;
  PyObject *weakrefs;
} TimedIterator;

static inline State *state_of_type(PyTypeObject *tp) { return (State *)PyType_GetModuleState(tp); }

/* ---- helpers ---------------------------------------------------------------------------------- */

/* A global of a module (borrowed), or NULL with NameError set (what Python raises). */
static PyObject *lookup(PyObject *globals, PyObject *name) {
  if (globals == NULL) { /* configure() not called, or the module cleared (interpreter exit) */
    PyErr_SetString(PyExc_RuntimeError, "trainmon._speedups is not configured");
    return NULL;
  }
  PyObject *v = PyDict_GetItemWithError(globals, name);
  if (v == NULL && !PyErr_Occurred()) PyErr_Format(PyExc_NameError, "name '%U' is not defined", name);
  return v;
}

/* A global of _timing (borrowed), or NULL with an error set. */
static PyObject *global(State *st, int which) {
#if PY_VERSION_HEX < 0x030C0000
  if (st->globals != NULL) {
    const uint64_t tag = ((PyDictObject *)st->globals)->ma_version_tag;
    if (tag != st->globals_tag) { /* any change of the dict: look everything up again */
      memset(st->cached, 0, sizeof st->cached);
      st->globals_tag = tag;
    }
    PyObject *v = st->cached[which];
    if (v != NULL) return v;
    v = lookup(st->globals, st->strings[which]);
    /* (the lookup ran no code: the tag is still the one the value belongs to) */
    if (v != NULL && ((PyDictObject *)st->globals)->ma_version_tag == tag) st->cached[which] = v;
    return v;
  }
#endif
  return lookup(st->globals, st->strings[which]);
}

/* The slot of field f of nest when it can be used directly, else NULL. */
static inline PyObject **hot_slot(State *st, PyObject *nest, int f) {
  PyTypeObject *tp = Py_TYPE(nest);
  if ((PyObject *)tp != st->hot_type || st->hot_tag == 0 || tp->tp_version_tag != st->hot_tag ||
      !(tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
    return NULL;
  return (PyObject **)((char *)nest + st->offsets[f]);
}

/* nest.<field>: a new reference, or NULL with an error set. */
static PyObject *hot_get(State *st, PyObject *nest, int f) {
  PyObject **slot = hot_slot(st, nest, f);
  if (slot != NULL && *slot != NULL) {
    Py_INCREF(*slot);
    return *slot;
  }
  return PyObject_GetAttr(nest, st->field_names[f]);
}

/* nest.<field> = v: 0, or -1 with an error set. */
static int hot_set(State *st, PyObject *nest, int f, PyObject *v) {
  PyObject **slot = hot_slot(st, nest, f);
  if (slot != NULL) {
    PyObject *old = *slot;
    Py_INCREF(v);
    *slot = v;
    Py_XDECREF(old);
    return 0;
  }
  return PyObject_SetAttr(nest, st->field_names[f], v);
}

/* The same value as time.monotonic() (CPython: nanoseconds as an integer, then / 1e9). */
static PyObject *monotonic_now(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return PyErr_SetFromErrno(PyExc_OSError);
  const int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  return PyFloat_FromDouble((double)ns / 1e9);
}

/* _mono() of a module: a new reference, or NULL with an error set. */
static PyObject *mono_of(State *st, PyObject *globals) {
  PyObject *fn = lookup(globals, st->strings[S_MONO]);
  if (fn == NULL) return NULL;
  if (fn == st->monotonic) return monotonic_now();
  Py_INCREF(fn);
  PyObject *r = PyObject_CallNoArgs(fn);
  Py_DECREF(fn);
  return r;
}

static PyObject *mono(State *st) { return mono_of(st, st->globals); }

/* The current error is an Exception: cleared, 0 (`except Exception: pass`). Else -1, kept. */
static int swallow(void) {
  if (PyErr_ExceptionMatches(PyExc_Exception)) {
    PyErr_Clear();
    return 0;
  }
  return -1;
}

/* `not 0 < n <= 10_000_000` for an object n: 1 (out of range), 0 (in range), -1 error. */
static int out_of_range(PyObject *n) {
  if (PyLong_CheckExact(n)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    return overflow || !(v > 0 && v <= 10000000);
  }
  PyObject *zero = PyLong_FromLong(0);
  if (zero == NULL) return -1;
  int r = PyObject_RichCompareBool(zero, n, Py_LT);
  Py_DECREF(zero);
  if (r <= 0) return r < 0 ? -1 : 1;
  PyObject *top = PyLong_FromLong(10000000);
  if (top == NULL) return -1;
  r = PyObject_RichCompareBool(n, top, Py_LE);
  Py_DECREF(top);
  return r < 0 ? -1 : !r;
}

/* The batch's samples (the Python method's inline fast_samples): a new reference, or NULL with an
 * error set (the caller applies the method's `except Exception`). */
static PyObject *samples_of(State *st, PyObject *batch) {
  PyObject *x = batch;
  if (PyList_CheckExact(batch) && PyList_GET_SIZE(batch) > 0)
    x = PyList_GET_ITEM(batch, 0);
  else if (PyTuple_CheckExact(batch) && PyTuple_GET_SIZE(batch) > 0)
    x = PyTuple_GET_ITEM(batch, 0);
  PyObject *tensor = global(st, S_TENSOR);
  if (tensor == NULL) return NULL;
  if ((PyObject *)Py_TYPE(x) == tensor) {
    /* the inner try: _tensor_len's lookup, its call and the range check; an Exception gives -1 */
    PyObject *len_fn = global(st, S_TENSOR_LEN);
    PyObject *n = NULL;
    if (len_fn != NULL) {
      Py_INCREF(x); /* x is borrowed from the batch, which the call might change */
      Py_INCREF(len_fn);
      n = PyObject_CallOneArg(len_fn, x);
      Py_DECREF(len_fn);
      Py_DECREF(x);
    }
    int bad = n == NULL ? -1 : out_of_range(n);
    if (bad == 0) return n;
    Py_XDECREF(n);
    if (bad < 0 && swallow() < 0) return NULL;
    return PyLong_FromLong(-1);
  }
  PyObject *fast = global(st, S_FAST_SAMPLES);
  if (fast == NULL) return NULL;
  Py_INCREF(fast);
  PyObject *n = PyObject_CallOneArg(fast, batch);
  Py_DECREF(fast);
  return n;
}

/* _journal_append(entry), then `len(_journal) > _JOURNAL_CAP`: 1, 0, or -1 with an error set. */
static int journal_add(State *st, PyObject *entry) {
  PyObject *append = global(st, S_JOURNAL_APPEND);
  if (append == NULL) return -1;
  if (append == st->journal_append) {
    if (PyList_Append(st->journal, entry) < 0) return -1;
  } else {
    Py_INCREF(append);
    PyObject *r = PyObject_CallOneArg(append, entry);
    Py_DECREF(append);
    if (r == NULL) return -1;
    Py_DECREF(r);
  }
  PyObject *journal = global(st, S_JOURNAL);
  if (journal == NULL) return -1;
  PyObject *cap = global(st, S_CAP);
  if (cap == NULL) return -1;
  if (PyList_CheckExact(journal) && PyLong_CheckExact(cap)) {
    int overflow = 0;
    const long long c = PyLong_AsLongLongAndOverflow(cap, &overflow);
    if (c == -1 && PyErr_Occurred()) return -1;
    if (!overflow) return PyList_GET_SIZE(journal) > c;
  }
  Py_INCREF(journal);
  Py_INCREF(cap);
  int r = -1;
  const Py_ssize_t size = PyObject_Size(journal);
  PyObject *len = size < 0 ? NULL : PyLong_FromSsize_t(size);
  if (len != NULL) {
    r = PyObject_RichCompareBool(len, cap, Py_GT);
    Py_DECREF(len);
  }
  Py_DECREF(cap);
  Py_DECREF(journal);
  return r;
}

/* _timer.<method>(*args) with the result dropped: 0, or -1 with an error set. */
static int timer_call(State *st, int method, PyObject *const *args, size_t nargs) {
  PyObject *timer = global(st, S_TIMER);
  if (timer == NULL) return -1;
  PyObject *stack[4];
  stack[0] = timer;
  for (size_t i = 0; i < nargs; i++) stack[i + 1] = args[i];
  Py_INCREF(timer);
  PyObject *r = PyObject_VectorcallMethod(st->strings[method], stack, nargs + 1, NULL);
  Py_DECREF(timer);
  if (r == NULL) return -1;
  Py_DECREF(r);
  return 0;
}

/* ---- TimedIterator ---------------------------------------------------------------------------- */

static PyObject *ti_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  PyObject *inner, *key;
  static char *kwlist[] = {"inner", "key", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:TimedIterator", kwlist, &inner, &key)) return NULL;
  TimedIterator *self = (TimedIterator *)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  Py_INCREF(inner);
  self->inner = inner;
  Py_INCREF(key);
  self->key = key;
  self->weakrefs = NULL;
  return (PyObject *)self;
}

static int ti_traverse(TimedIterator *self, visitproc visit, void *arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(self->inner);
  Py_VISIT(self->key);
  return 0;
}

static int ti_clear(TimedIterator *self) {
  Py_CLEAR(self->inner);
  Py_CLEAR(self->key);
  return 0;
}

static void ti_dealloc(TimedIterator *self) {
  PyTypeObject *tp = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (self->weakrefs != NULL) PyObject_ClearWeakRefs((PyObject *)self);
  ti_clear(self);
  tp->tp_free((PyObject *)self);
  Py_DECREF(tp);
}

static PyObject *ti_iter(PyObject *self) {
  Py_INCREF(self);
  return self;
}

/* next(inner): what `type(inner).__next__.__get__(inner)()` does (StopIteration set when the
 * iterator ends without one), or the TypeError of next() for an object that is not an iterator. */
static PyObject *inner_next(PyObject *inner) {
  if (!PyIter_Check(inner)) {
    PyErr_Format(PyExc_TypeError, "'%.200s' object is not an iterator", Py_TYPE(inner)->tp_name);
    return NULL;
  }
  Py_INCREF(inner);
  PyObject *r = (*Py_TYPE(inner)->tp_iternext)(inner);
  Py_DECREF(inner);
  if (r == NULL && !PyErr_Occurred()) PyErr_SetNone(PyExc_StopIteration);
  return r;
}

/* The wrapped iterator raised (error set): depth back to 0 and, for StopIteration, the loader's
 * end to the timer; then the same exception re-raised. */
static PyObject *inner_raised(State *st, TimedIterator *self, PyObject *nest, PyObject *t0) {
  const int stop = PyErr_ExceptionMatches(PyExc_StopIteration);
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject *zero = PyLong_FromLong(0);
  if (zero == NULL || hot_set(st, nest, F_DEPTH, zero) < 0) {
    Py_XDECREF(zero);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL; /* Python: the new error, raised in the except block */
  }
  Py_DECREF(zero);
  if (stop) {
    PyObject *t1 = mono(st);
    int rc = -1;
    if (t1 != NULL) {
      PyObject *args[3] = {self->key, t0, t1};
      rc = timer_call(st, S_LOADER_STOP, args, 3);
      Py_DECREF(t1);
    }
    if (rc < 0 && swallow() < 0) {
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
      return NULL; /* KeyboardInterrupt inside loader_stop: it propagates instead */
    }
  }
  PyErr_Restore(type, value, tb);
  return NULL;
}

/* After the batch: the journal entry and the phase (the Python method's `try:` block): 0, or -1
 * with an error set. */
static int after_batch(State *st, TimedIterator *self, PyObject *nest, PyObject *t0, PyObject *batch) {
  PyObject *t1 = mono(st);
  if (t1 == NULL) return -1;
  PyObject *n = samples_of(st, batch);
  if (n == NULL) {
    Py_DECREF(t1);
    return -1;
  }
  PyObject *code = global(st, S_J_BATCH);
  Py_XINCREF(code); /* owned before any allocation (a collection may run code) */
  PyObject *id = code == NULL ? NULL : PyLong_FromVoidPtr(self);
  PyObject *entry = id == NULL ? NULL : PyTuple_New(6);
  if (entry == NULL) {
    Py_XDECREF(id);
    Py_XDECREF(code);
    Py_DECREF(n);
    Py_DECREF(t1);
    return -1;
  }
  PyTuple_SET_ITEM(entry, 0, code);
  Py_INCREF(self->key);
  PyTuple_SET_ITEM(entry, 1, self->key);
  PyTuple_SET_ITEM(entry, 2, id);
  Py_INCREF(t0);
  PyTuple_SET_ITEM(entry, 3, t0);
  Py_INCREF(t1);
  PyTuple_SET_ITEM(entry, 4, t1);
  PyTuple_SET_ITEM(entry, 5, n);
  const int full = journal_add(st, entry);
  Py_DECREF(entry);
  if (full < 0 || hot_set(st, nest, F_PHASE, st->strings[S_COMPUTE]) < 0 ||
      hot_set(st, nest, F_PHASE_MT, t1) < 0) {
    Py_DECREF(t1);
    return -1;
  }
  Py_DECREF(t1);
  if (full) return timer_call(st, S_DRAIN, NULL, 0);
  return 0;
}

static PyObject *ti_next_timed(State *st, TimedIterator *self, PyObject *nest) {
  if (hot_set(st, nest, F_PHASE, st->strings[S_DATA]) < 0) return NULL;
  PyObject *t0 = mono(st);
  if (t0 == NULL) return NULL;
  PyObject *one = NULL, *zero = NULL, *batch = NULL;
  if (hot_set(st, nest, F_PHASE_MT, t0) < 0 || (one = PyLong_FromLong(1)) == NULL ||
      hot_set(st, nest, F_DEPTH, one) < 0)
    goto done;
  batch = inner_next(self->inner);
  if (batch == NULL) {
    inner_raised(st, self, nest, t0);
    goto done;
  }
  if ((zero = PyLong_FromLong(0)) == NULL || hot_set(st, nest, F_DEPTH, zero) < 0) {
    Py_CLEAR(batch);
    goto done;
  }
  if (after_batch(st, self, nest, t0, batch) < 0 && swallow() < 0) Py_CLEAR(batch);
done:
  Py_XDECREF(one);
  Py_XDECREF(zero);
  Py_DECREF(t0);
  return batch;
}

static PyObject *ti_next(TimedIterator *self) {
  State *st = state_of_type(Py_TYPE(self));
  if (st == NULL) return NULL;
  if (self->inner == NULL || self->key == NULL) { /* only after tp_clear */
    PyErr_SetString(PyExc_RuntimeError, "trainmon._speedups.TimedIterator was cleared");
    return NULL;
  }
  PyObject *nest = global(st, S_TLS);
  if (nest == NULL) return NULL;
  Py_INCREF(nest);
  PyObject *result = NULL;
  /* if nest.depth or nest.level > LOOP: return self._next() */
  PyObject *depth = hot_get(st, nest, F_DEPTH);
  if (depth == NULL) goto out;
  int nested = PyObject_IsTrue(depth);
  Py_DECREF(depth);
  if (nested < 0) goto out;
  if (!nested) {
    PyObject *level = hot_get(st, nest, F_LEVEL);
    if (level == NULL) goto out;
    PyObject *loop = global(st, S_LOOP);
    if (loop == NULL) {
      Py_DECREF(level);
      goto out;
    }
    if (PyLong_CheckExact(level) && PyLong_CheckExact(loop) && Py_SIZE(level) >= 0 && Py_SIZE(level) <= 1 &&
        Py_SIZE(loop) >= 0 && Py_SIZE(loop) <= 1) {
      /* small non-negative ints (one digit): compare the values */
      nested = PyLong_AsLong(level) > PyLong_AsLong(loop);
    } else {
      Py_INCREF(loop);
      nested = PyObject_RichCompareBool(level, loop, Py_GT);
      Py_DECREF(loop);
    }
    Py_DECREF(level);
    if (nested < 0) goto out;
  }
  if (nested) {
    result = inner_next(self->inner);
    /* a C iterator's end: no exception object needed (for loops, next() make StopIteration) */
    if (result == NULL && PyErr_ExceptionMatches(PyExc_StopIteration)) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      if (value == NULL || value == Py_None) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
      } else {
        PyErr_Restore(type, value, tb);
      }
    }
    goto out;
  }
  result = ti_next_timed(st, self, nest);
out:
  Py_DECREF(nest);
  return result;
}

static PyMemberDef ti_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TimedIterator, weakrefs), READONLY, NULL},
    {"_inner", T_OBJECT_EX, offsetof(TimedIterator, inner), READONLY, NULL},
    {"_key", T_OBJECT_EX, offsetof(TimedIterator, key), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot ti_slots[] = {
    {Py_tp_doc, "The iterator of a TimedIterator: _timing._TimedIterator in C (trainmon._speedups)."},
    {Py_tp_new, ti_new},
    {Py_tp_dealloc, ti_dealloc},
    {Py_tp_traverse, ti_traverse},
    {Py_tp_clear, ti_clear},
    {Py_tp_iter, ti_iter},
    {Py_tp_iternext, ti_next},
    {Py_tp_members, ti_members},
    {0, NULL},
};

static PyType_Spec ti_spec = {
    .name = "trainmon._speedups.TimedIterator",
    .basicsize = sizeof(TimedIterator),
    .itemsize = 0,
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = ti_slots,
};

/* ---- the module ------------------------------------------------------------------------------- */

/* configure(globals, hot_type, monotonic): the _timing module's globals, its _Hot class and
 * time.monotonic. Returns the TimedIterator type. */
static PyObject *configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3 || !PyDict_Check(args[0]) || !PyType_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "configure(globals: dict, hot_type: type, monotonic)");
    return NULL;
  }
  State *st = (State *)PyModule_GetState(module);
  if (st == NULL) return NULL;
  if (st->iter_type == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "trainmon._speedups was cleared");
    return NULL;
  }
  PyTypeObject *hot = (PyTypeObject *)args[1];
  Py_ssize_t offsets[F_COUNT];
  int direct = 1;
  for (int f = 0; f < F_COUNT; f++) {
    /* each field a writable object slot (a member descriptor, T_OBJECT_EX) of hot itself */
    PyObject *d = PyDict_GetItemWithError(hot->tp_dict, st->field_names[f]);
    if (d == NULL && PyErr_Occurred()) return NULL;
    if (d == NULL || Py_TYPE(d) != &PyMemberDescr_Type ||
        ((PyDescrObject *)d)->d_type != hot) {
      direct = 0;
      break;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY) || m->offset <= 0 ||
        (size_t)m->offset + sizeof(PyObject *) > (size_t)hot->tp_basicsize) {
      direct = 0;
      break;
    }
    offsets[f] = m->offset;
  }
  /* a lookup on the type gives it a valid version tag; a later change of the type changes it */
  PyObject *probe = PyObject_GetAttr(args[1], st->field_names[F_DEPTH]);
  if (probe == NULL) return NULL;
  Py_DECREF(probe);
  unsigned int tag = 0;
  if (direct && (hot->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && hot->tp_getattro == PyObject_GenericGetAttr &&
      hot->tp_setattro == PyObject_GenericSetAttr)
    tag = hot->tp_version_tag;
  PyObject *append = PyDict_GetItemWithError(args[0], st->strings[S_JOURNAL_APPEND]);
  if (append == NULL && PyErr_Occurred()) return NULL;
  PyObject *journal = PyDict_GetItemWithError(args[0], st->strings[S_JOURNAL]);
  if (journal == NULL && PyErr_Occurred()) return NULL;
  PyObject *self_of_append = NULL;
  if (append != NULL && PyCFunction_Check(append)) self_of_append = PyCFunction_GET_SELF(append);
  if (journal == NULL || !PyList_CheckExact(journal) || self_of_append != journal ||
      strcmp(((PyCFunctionObject *)append)->m_ml->ml_name, "append") != 0) {
    append = NULL; /* never taken for the list's append: every append calls _journal_append */
    journal = NULL;
  }
  for (int f = 0; f < F_COUNT; f++) st->offsets[f] = direct ? offsets[f] : 0;
  st->hot_tag = tag;
  st->globals_tag = 0;
  memset(st->cached, 0, sizeof st->cached);
  Py_INCREF(args[0]);
  Py_XSETREF(st->globals, args[0]);
  Py_INCREF(args[1]);
  Py_XSETREF(st->hot_type, args[1]);
  Py_INCREF(args[2]);
  Py_XSETREF(st->monotonic, args[2]);
  Py_XINCREF(journal);
  Py_XSETREF(st->journal, journal);
  Py_XINCREF(append);
  Py_XSETREF(st->journal_append, append);
  Py_INCREF(st->iter_type);
  return st->iter_type;
}

/* now(): clock_gettime(CLOCK_MONOTONIC) as time.monotonic() gives it (tests compare the two). */
static PyObject *now(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  return monotonic_now();
}

static PyMethodDef module_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(globals, hot_type, monotonic) -> TimedIterator: bind to _timing's globals."},
    {"now", now, METH_NOARGS, "time.monotonic(), read as the iterator reads it."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
  State *st = (State *)PyModule_GetState(module);
  for (int i = 0; i < S_COUNT; i++) {
    st->strings[i] = PyUnicode_InternFromString(kStrings[i]);
    if (st->strings[i] == NULL) return -1;
  }
  for (int f = 0; f < F_COUNT; f++) {
    st->field_names[f] = PyUnicode_InternFromString(kFieldNames[f]);
    if (st->field_names[f] == NULL) return -1;
  }
  st->iter_type = PyType_FromModuleAndSpec(module, &ti_spec, NULL);
  if (st->iter_type == NULL) return -1;
  if (PyModule_AddObjectRef(module, "TimedIterator", st->iter_type) < 0) return -1;
  if (PyModule_AddIntConstant(module, "VERSION", SPEEDUPS_VERSION) < 0) return -1;
  return 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
  State *st = (State *)PyModule_GetState(module);
  if (st == NULL) return 0;
  Py_VISIT(st->iter_type);
  Py_VISIT(st->globals);
  Py_VISIT(st->hot_type);
  Py_VISIT(st->monotonic);
  Py_VISIT(st->journal);
  Py_VISIT(st->journal_append);
  return 0;
}

static int module_clear(PyObject *module) {
  State *st = (State *)PyModule_GetState(module);
  if (st == NULL) return 0;
  /* globals first: an iterator still running sees NULL there and raises, never reads the rest */
  Py_CLEAR(st->globals);
  memset(st->cached, 0, sizeof st->cached);
  Py_CLEAR(st->journal_append);
  Py_CLEAR(st->journal);
  Py_CLEAR(st->hot_type);
  Py_CLEAR(st->monotonic);
  Py_CLEAR(st->iter_type);
  return 0;
}

/* The interned names live until the module is freed (no cycle goes through them; an iterator that
 * runs while the module is cleared may still use them). */
static void module_free(void *module) {
  module_clear((PyObject *)module);
  State *st = (State *)PyModule_GetState((PyObject *)module);
  if (st == NULL) return;
  for (int i = 0; i < S_COUNT; i++) Py_CLEAR(st->strings[i]);
  for (int f = 0; f < F_COUNT; f++) Py_CLEAR(st->field_names[f]);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "trainmon._speedups",
    .m_doc = "Optional C version of trainmon's loader hot path (see _timing._TimedIterator).",
    .m_size = sizeof(State),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModuleDef_Init(&module_def); }
