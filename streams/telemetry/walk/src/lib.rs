//! The walk of one decoded gnmic message (json or event format) into its notifications'
//! leaves, compiled: the per-value hot path of the telemetry stage, which then folds them into
//! the rates and link health (`core`) or makes TelemetryValues of them. See README.md.
//!
//! The walk: which keys a message has, flattening subtrees and lists, the
//! per-path cache, and the common counter spellings. What a path or a value *means* stays in
//! Python, called from here and cached where it repeats: the path table (`leaves.resolve`), the
//! general value conversion (`values.convert`), stamps in other units (`gnmic._timestamp`),
//! device names (`gnmic._device`), event paths with list indices (`gnmic._event_path`), list
//! entry keys (`leaves.keyed_path`) and LLDP leaves (`lldp`). So there is one implementation of
//! each rule, and `gnmic.py` explains the formats.

mod core;
mod health;
mod pyops;
mod rates;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString};

/// What a path resolves to (`leaves._Target`), kept per path string.
struct Target {
    metric: Py<PyAny>,
    interface: Option<Py<PyAny>>,
    qualifier: Option<Py<PyAny>>,
    interface_tag: Py<PyAny>,
    qualifier_tag: Py<PyAny>,
    qualifier_prefix: String,
    counter: bool,
}

/// The largest counter, 2**64 - 1, as a decimal string.
const MAX_COUNTER: &str = "18446744073709551615";

/// One leaf that made a value: what a TelemetryValue holds beside its notification's stamp
/// and device.
pub(crate) struct Leaf {
    pub(crate) interface: Py<PyAny>,
    pub(crate) metric: Py<PyAny>,
    pub(crate) value: Py<PyAny>,
    pub(crate) qualifier: Py<PyAny>,
}

/// One notification's leaves: its stamp, device and tags, the values made of them and the
/// counts of leaves that made none. Read by `gnmic._values` and `gnmic.decode_with_lldp`.
#[pyclass(module = "railtrace.streams.telemetry._walk")]
struct Part {
    #[pyo3(get)]
    ts_ns: Py<PyAny>,
    #[pyo3(get)]
    unit: Py<PyAny>,
    #[pyo3(get)]
    device: Py<PyAny>,
    #[pyo3(get)]
    tags: Py<PyAny>,
    leaves: Vec<Leaf>,
    value_type: Py<PyAny>,
    #[pyo3(get)]
    unknown: usize,
    #[pyo3(get)]
    unattributed: usize,
    #[pyo3(get)]
    bad: usize,
    #[pyo3(get)]
    pathless: usize,
    #[pyo3(get)]
    lldp: Option<Py<PyList>>,
    #[pyo3(get)]
    lldp_deletes: Option<Py<PyList>>,
}

#[pymethods]
impl Part {
    /// The notification's TelemetryValues, made on each read.
    #[getter]
    fn out<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for leaf in &self.leaves {
            out.append(self.value_type.bind(py).call1((
                self.ts_ns.bind(py),
                self.device.bind(py),
                leaf.interface.bind(py),
                leaf.metric.bind(py),
                leaf.value.bind(py),
                leaf.qualifier.bind(py),
            ))?)?;
        }
        Ok(out)
    }
}

/// The Python rules the walk calls, and its caches.
#[pyclass(module = "railtrace.streams.telemetry._walk", frozen)]
struct Walker {
    resolve: Py<PyAny>,
    is_event: Py<PyAny>,
    convert: Py<PyAny>,
    timestamp: Py<PyAny>,
    device: Py<PyAny>,
    event_path: Py<PyAny>,
    keyed_path: Py<PyAny>,
    neighbour_leaf: Py<PyAny>,
    deleted_neighbours: Py<PyAny>,
    value_type: Py<PyAny>,
    error_type: Py<PyAny>,
    ns_unit: Py<PyAny>,
    typed_keys: HashSet<String>,
    decimal_keys: HashSet<String>,
    key_leaves: HashSet<String>,
    interface_tags: Vec<Py<PyAny>>,
    max_depth: usize,
    earliest_ns: i64,
    latest_ns: i64,
    cache_size: usize,
    targets: Mutex<HashMap<String, Option<Arc<Target>>>>,
    devices: Mutex<HashMap<String, Py<PyAny>>>,
}

fn strings(items: &Bound<'_, PyAny>) -> PyResult<HashSet<String>> {
    items
        .try_iter()?
        .map(|item| item?.extract::<String>())
        .collect()
}

/// A Python str as UTF-8; a str that is not (lone surrogates) is read with replacement.
fn text(s: &Bound<'_, PyString>) -> String {
    match s.to_str() {
        Ok(t) => t.to_owned(),
        Err(_) => s.to_string_lossy().into_owned(),
    }
}

/// A dict key as the path element Python's f-string would write.
fn element(key: &Bound<'_, PyAny>) -> PyResult<String> {
    match key.cast::<PyString>() {
        Ok(s) => Ok(text(s)),
        Err(_) => Ok(text(&key.str()?)),
    }
}

/// `base + path.lstrip("/") if base else path`
fn joined(base: &str, path: &str) -> String {
    if base.is_empty() {
        path.to_owned()
    } else {
        let mut out = String::with_capacity(base.len() + path.len());
        out.push_str(base);
        out.push_str(path.trim_start_matches('/'));
        out
    }
}

/// An ASCII decimal string of at most 2**64 - 1: a counter as JSON_IETF spells it.
fn plain_counter(s: &str) -> Option<u64> {
    let n = s.len();
    if n == 0 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if n > MAX_COUNTER.len() || (n == MAX_COUNTER.len() && s > MAX_COUNTER) {
        return None;
    }
    s.parse::<u64>().ok()
}

impl Walker {
    fn error(&self, py: Python<'_>, reason: &str) -> PyErr {
        match self.error_type.call1(py, (reason,)) {
            Ok(exc) => PyErr::from_value(exc.into_bound(py)),
            Err(err) => err,
        }
    }

    fn is_typed(&self, value: &Bound<'_, PyDict>) -> bool {
        match value.len() {
            1 => value.keys().get_item(0).ok().is_some_and(|key| {
                key.cast::<PyString>()
                    .ok()
                    .and_then(|s| s.to_str().ok())
                    .is_some_and(|k| self.typed_keys.contains(k) || self.decimal_keys.contains(k))
            }),
            2 => value.keys().iter().all(|key| {
                key.cast::<PyString>()
                    .ok()
                    .and_then(|s| s.to_str().ok())
                    .is_some_and(|k| self.decimal_keys.contains(k))
            }),
            _ => false,
        }
    }

    fn target(&self, py: Python<'_>, path: &str) -> PyResult<Option<Arc<Target>>> {
        if let Some(hit) = self.targets.lock().unwrap().get(path) {
            return Ok(hit.clone());
        }
        let resolved = self.resolve.bind(py).call1((path,))?;
        let target = if resolved.is_none() {
            None
        } else {
            let entry = resolved.get_item(3)?;
            let opt = |v: Bound<'_, PyAny>| if v.is_none() { None } else { Some(v.unbind()) };
            Some(Arc::new(Target {
                metric: resolved.get_item(0)?.unbind(),
                interface: opt(resolved.get_item(1)?),
                qualifier: opt(resolved.get_item(2)?),
                interface_tag: entry.getattr("interface_tag")?.unbind(),
                qualifier_tag: entry.getattr("qualifier_tag")?.unbind(),
                qualifier_prefix: entry.getattr("qualifier_prefix")?.extract()?,
                counter: resolved.get_item(4)?.is_truthy()?,
            }))
        };
        let mut cache = self.targets.lock().unwrap();
        if cache.len() >= self.cache_size {
            cache.clear();
        }
        cache.insert(path.to_owned(), target.clone());
        Ok(target)
    }

    fn stamp(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
        if value.is_exact_instance_of::<PyInt>() {
            if let Ok(ns) = value.extract::<i64>() {
                if self.earliest_ns <= ns && ns < self.latest_ns {
                    return Ok((value.clone().unbind(), self.ns_unit.clone_ref(py)));
                }
            }
        }
        let read = self.timestamp.bind(py).call1((value,))?;
        Ok((read.get_item(0)?.unbind(), read.get_item(1)?.unbind()))
    }

    fn device_of(&self, py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let key = match source.cast_exact::<PyString>() {
            Ok(s) => s.to_str().ok().map(str::to_owned),
            Err(_) => None,
        };
        if let Some(k) = &key {
            if let Some(hit) = self.devices.lock().unwrap().get(k) {
                return Ok(hit.clone_ref(py));
            }
        }
        let device = self.device.bind(py).call1((source,))?.unbind();
        if let Some(k) = key {
            let mut cache = self.devices.lock().unwrap();
            if cache.len() >= self.cache_size {
                cache.clear();
            }
            cache.insert(k, device.clone_ref(py));
        }
        Ok(device)
    }

    fn part(
        &self,
        py: Python<'_>,
        stamp: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        tags: Bound<'_, PyAny>,
    ) -> PyResult<Part> {
        let (ts_ns, unit) = self.stamp(py, stamp)?;
        Ok(Part {
            ts_ns,
            unit,
            device: self.device_of(py, source)?,
            tags: tags.unbind(),
            leaves: Vec::new(),
            value_type: self.value_type.clone_ref(py),
            unknown: 0,
            unattributed: 0,
            bad: 0,
            pathless: 0,
            lldp: None,
            lldp_deletes: None,
        })
    }

    fn add(
        &self,
        py: Python<'_>,
        part: &mut Part,
        path: &str,
        value: &Bound<'_, PyAny>,
        depth: usize,
    ) -> PyResult<()> {
        let dict = value.cast_exact::<PyDict>().ok();
        let list = value.cast_exact::<PyList>().ok();
        if (dict.is_some() || list.is_some()) && depth > self.max_depth {
            part.bad += 1;
            return Ok(());
        }
        if let Some(d) = dict {
            if !self.is_typed(d) {
                for (name, child) in d.iter() {
                    let child_path = format!("{path}/{}", element(&name)?);
                    self.add(py, part, &child_path, &child, depth + 1)?;
                }
                return Ok(());
            }
        }
        if let Some(l) = list {
            if l.len() > 0 && l.get_item(0)?.is_exact_instance_of::<PyDict>() {
                for item in l.iter() {
                    let Ok(entry) = item.cast::<PyDict>() else {
                        continue;
                    };
                    let keyed = self.keyed_path.bind(py).call1((path, entry))?;
                    if keyed.is_none() {
                        part.bad += 1;
                        continue;
                    }
                    let keyed = text(keyed.cast::<PyString>()?);
                    for (name, child) in entry.iter() {
                        let name = element(&name)?;
                        if !self.key_leaves.contains(&name) {
                            self.add(py, part, &format!("{keyed}/{name}"), &child, depth + 1)?;
                        }
                    }
                }
                return Ok(());
            }
        }
        let Some(target) = self.target(py, path)? else {
            if path.contains("lldp") {
                let leaf = self
                    .neighbour_leaf
                    .bind(py)
                    .call1((path, value, part.tags.bind(py)))?;
                if !leaf.is_none() {
                    part.lldp
                        .get_or_insert_with(|| PyList::empty(py).unbind())
                        .bind(py)
                        .append(leaf)?;
                    return Ok(());
                }
            }
            if path.trim_matches('/').is_empty() {
                part.pathless += 1;
            } else {
                part.unknown += 1;
            }
            return Ok(());
        };
        let mut interface = target.interface.as_ref().map(|i| i.clone_ref(py));
        let mut qualifier = target.qualifier.as_ref().map(|q| q.clone_ref(py));
        if interface.is_none() || qualifier.is_none() {
            (interface, qualifier) = self.with_tags(py, part, &target, interface, qualifier)?;
        }
        let attributed = match &interface {
            None => false,
            Some(i) => i.bind(py).is_truthy()?,
        };
        if !attributed {
            part.unattributed += 1;
            return Ok(());
        }
        let number: Option<Bound<'_, PyAny>> = if !target.counter {
            None
        } else if value.is_exact_instance_of::<PyInt>() {
            let non_negative = match value.extract::<i64>() {
                Ok(n) => n >= 0,
                Err(_) => value.ge(0)?,
            };
            non_negative.then(|| value.clone())
        } else if let Ok(s) = value.cast_exact::<PyString>() {
            s.to_str()
                .ok()
                .and_then(plain_counter)
                .map(|n| n.into_pyobject(py).map(|v| v.into_any()))
                .transpose()?
        } else {
            None
        };
        let converted = match number {
            Some(n) => n,
            None => {
                let c = self
                    .convert
                    .bind(py)
                    .call1((target.metric.bind(py), value))?;
                if c.is_none() {
                    part.bad += 1;
                    return Ok(());
                }
                c
            }
        };
        let (Some(interface), Some(qualifier)) = (interface, qualifier) else {
            unreachable!("an attributed leaf has an interface, and the tags give a qualifier")
        };
        part.leaves.push(Leaf {
            interface,
            metric: target.metric.clone_ref(py),
            value: converted.unbind(),
            qualifier,
        });
        Ok(())
    }

    /// Fill in from the event's tags what its key-less path could not name.
    #[allow(clippy::type_complexity)]
    fn with_tags(
        &self,
        py: Python<'_>,
        part: &Part,
        target: &Target,
        interface: Option<Py<PyAny>>,
        qualifier: Option<Py<PyAny>>,
    ) -> PyResult<(Option<Py<PyAny>>, Option<Py<PyAny>>)> {
        let tags = part.tags.bind(py);
        let interface = match interface {
            Some(i) => Some(i),
            None => {
                let mut found = None;
                for tag in std::iter::once(&target.interface_tag).chain(self.interface_tags.iter())
                {
                    if tags.contains(tag.bind(py))? {
                        found = Some(tags.get_item(tag.bind(py))?);
                        break;
                    }
                }
                found
                    .filter(|f| f.is_instance_of::<PyString>())
                    .map(Bound::unbind)
            }
        };
        let qualifier = match qualifier {
            Some(q) => Some(q),
            None => {
                let value = tags.call_method1("get", (target.qualifier_tag.bind(py), ""))?;
                let shown = if value.is_instance_of::<PyString>()
                    || value.is_instance_of::<PyInt>()
                    || value.is_instance_of::<PyFloat>()
                {
                    text(&value.str()?)
                } else {
                    String::new()
                };
                let q = format!("{}{}", target.qualifier_prefix, shown);
                Some(PyString::new(py, &q).into_any().unbind())
            }
        };
        Ok((interface, qualifier))
    }

    fn deletes(
        &self,
        py: Python<'_>,
        part: &mut Part,
        deletes: Option<Bound<'_, PyAny>>,
        base: &str,
    ) -> PyResult<()> {
        let Some(deletes) = deletes.filter(|d| !d.is_none()) else {
            return Ok(());
        };
        let Ok(paths) = deletes.cast::<PyList>() else {
            return Err(self.error(py, "deletes is not a list"));
        };
        for path in paths.iter() {
            let Ok(path) = path.cast::<PyString>() else {
                continue;
            };
            let full = joined(base, &text(path));
            if full.contains("lldp") {
                let gone = self
                    .deleted_neighbours
                    .bind(py)
                    .call1((full.as_str(), part.tags.bind(py)))?;
                if !gone.is_none() {
                    part.lldp_deletes
                        .get_or_insert_with(|| PyList::empty(py).unbind())
                        .bind(py)
                        .append(gone)?;
                }
            }
        }
        Ok(())
    }

    fn event(&self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<Part> {
        let Ok(event) = event.cast::<PyDict>() else {
            return Err(self.error(py, "event is not an object"));
        };
        let tags = match event.get_item(intern!(py, "tags"))? {
            Some(t) => t,
            None => PyDict::new(py).into_any(),
        };
        let values = match event.get_item(intern!(py, "values"))? {
            Some(v) => v,
            None => PyDict::new(py).into_any(),
        };
        let (Ok(tag_dict), Ok(values)) = (tags.cast::<PyDict>(), values.cast::<PyDict>()) else {
            return Err(self.error(py, "event tags or values is not an object"));
        };
        let stamp = event
            .get_item(intern!(py, "timestamp"))?
            .unwrap_or_else(|| py.None().into_bound(py));
        let source = tag_dict
            .get_item(intern!(py, "source"))?
            .unwrap_or_else(|| py.None().into_bound(py));
        let mut part = self.part(py, &stamp, &source, tags.clone())?;
        for (key, value) in values.iter() {
            let key_text = element(&key)?;
            let path = if key_text.contains('.') {
                let rebuilt = self.event_path.bind(py).call1((&key, values))?;
                text(rebuilt.cast::<PyString>()?)
            } else {
                key_text
            };
            self.add(py, &mut part, &path, &value, 0)?;
        }
        self.deletes(py, &mut part, event.get_item(intern!(py, "deletes"))?, "")?;
        Ok(part)
    }

    fn notification(&self, py: Python<'_>, message: &Bound<'_, PyDict>) -> PyResult<Part> {
        let prefix = message.get_item(intern!(py, "prefix"))?;
        let updates = message.get_item(intern!(py, "updates"))?;
        let prefix = match &prefix {
            None => Some(String::new()),
            Some(p) => p.cast::<PyString>().ok().map(text),
        };
        let updates = match &updates {
            None => Some(PyList::empty(py)),
            Some(u) => u.cast::<PyList>().ok().cloned(),
        };
        let (Some(prefix), Some(updates)) = (prefix, updates) else {
            return Err(self.error(py, "prefix is not a string or updates is not a list"));
        };
        let stamp = message
            .get_item(intern!(py, "timestamp"))?
            .unwrap_or_else(|| py.None().into_bound(py));
        let source = message
            .get_item(intern!(py, "source"))?
            .unwrap_or_else(|| py.None().into_bound(py));
        let mut part = self.part(py, &stamp, &source, PyDict::new(py).into_any())?;
        let base = if prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", prefix.trim_end_matches('/'))
        };
        for update in updates.iter() {
            let values = match update.cast::<PyDict>() {
                Ok(u) => u.get_item(intern!(py, "values"))?,
                Err(_) => None,
            };
            let Some(values) = values else {
                return Err(self.error(py, "update without a values object"));
            };
            let Ok(values) = values.cast::<PyDict>() else {
                return Err(self.error(py, "update without a values object"));
            };
            let update_path = update.cast::<PyDict>()?.get_item(intern!(py, "Path"))?;
            let single = match &update_path {
                Some(p) if values.len() == 1 => p.cast::<PyString>().ok().map(text),
                _ => None,
            };
            for (key, value) in values.iter() {
                let path = match &single {
                    Some(p) => p.clone(),
                    None => element(&key)?,
                };
                self.add(py, &mut part, &joined(&base, &path), &value, 0)?;
            }
        }
        self.deletes(
            py,
            &mut part,
            message.get_item(intern!(py, "deletes"))?,
            &base,
        )?;
        Ok(part)
    }
}

#[pymethods]
impl Walker {
    #[new]
    #[pyo3(signature = (*, resolve, is_event, convert, timestamp, device, event_path, keyed_path,
        neighbour_leaf, deleted_neighbours, value_type, error_type, ns_unit, typed_keys,
        decimal_keys, key_leaves, interface_tags, max_depth, earliest_ns, latest_ns, cache_size))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        resolve: Py<PyAny>,
        is_event: Py<PyAny>,
        convert: Py<PyAny>,
        timestamp: Py<PyAny>,
        device: Py<PyAny>,
        event_path: Py<PyAny>,
        keyed_path: Py<PyAny>,
        neighbour_leaf: Py<PyAny>,
        deleted_neighbours: Py<PyAny>,
        value_type: Py<PyAny>,
        error_type: Py<PyAny>,
        ns_unit: Py<PyAny>,
        typed_keys: &Bound<'_, PyAny>,
        decimal_keys: &Bound<'_, PyAny>,
        key_leaves: &Bound<'_, PyAny>,
        interface_tags: &Bound<'_, PyAny>,
        max_depth: usize,
        earliest_ns: i64,
        latest_ns: i64,
        cache_size: usize,
    ) -> PyResult<Self> {
        if cache_size == 0 {
            return Err(PyTypeError::new_err("cache_size must be positive"));
        }
        Ok(Walker {
            resolve,
            is_event,
            convert,
            timestamp,
            device,
            event_path,
            keyed_path,
            neighbour_leaf,
            deleted_neighbours,
            value_type,
            error_type,
            ns_unit,
            typed_keys: strings(typed_keys)?,
            decimal_keys: strings(decimal_keys)?,
            key_leaves: strings(key_leaves)?,
            interface_tags: interface_tags
                .try_iter()?
                .map(|t| t.map(Bound::unbind))
                .collect::<PyResult<_>>()?,
            max_depth,
            earliest_ns,
            latest_ns,
            cache_size,
            targets: Mutex::new(HashMap::new()),
            devices: Mutex::new(HashMap::new()),
        })
    }

    /// The notifications of one gnmic message, each with its values; raises the DecodeError
    /// type it was given for a malformed message.
    fn parts(&self, py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<Vec<Part>> {
        if let Ok(events) = message.cast::<PyList>() {
            return events.iter().map(|e| self.event(py, &e)).collect();
        }
        let Ok(dict) = message.cast::<PyDict>() else {
            let kind = message.get_type().name()?;
            let reason = format!("message is a JSON {kind}, not an object or array");
            return Err(self.error(py, &reason));
        };
        if dict.contains(intern!(py, "sync-response"))? {
            return Ok(Vec::new());
        }
        let extensions_only = dict.len() > 0
            && dict.keys().iter().all(|k| {
                k.cast::<PyString>()
                    .ok()
                    .and_then(|s| s.to_str().ok())
                    .is_some_and(|s| s == "extensions" || s == "decodedExtensions")
            });
        if extensions_only {
            return Ok(Vec::new());
        }
        if self.is_event.bind(py).call1((dict,))?.is_truthy()? {
            return Ok(vec![self.event(py, message)?]);
        }
        Ok(vec![self.notification(py, dict)?])
    }

    /// One gnmic message walked and folded straight into a device's rates and link health:
    /// no TelemetryValue or LinkSample is made. Samples go to `samples` as wire rows by
    /// partition, `route(device, interface)` giving (link id, partition); resets and health
    /// events go to `events` as `normalize` gives them. The whole message is walked before
    /// anything is folded, so a malformed one (the DecodeError type raised) changes nothing.
    /// Returns the number of values, the stamp of the last one (None without values) and the
    /// notifications' Parts that have leaves which made no value, a stamp in another unit or
    /// LLDP news: `gnmic` counts and reads them as for a decode (the others would add
    /// nothing, and leaving them here spares the hot path an object per message).
    #[allow(clippy::too_many_arguments)]
    fn fold<'py>(
        &self,
        py: Python<'py>,
        message: &Bound<'py, PyAny>,
        rates: &Bound<'py, core::RatesCore>,
        health: &Bound<'py, core::HealthCore>,
        route: &Bound<'py, PyAny>,
        samples: &Bound<'py, PyDict>,
        events: &Bound<'py, PyList>,
    ) -> PyResult<(usize, Option<i64>, Vec<Part>)> {
        let parts = self.parts(py, message)?;
        let mut rates = rates.borrow_mut();
        let mut health = health.borrow_mut();
        core::pair(&mut rates, &health);
        let out = core::Samples::Rows {
            route,
            by_partition: samples,
        };
        let (mut values, mut last_ts) = (0, None);
        for part in &parts {
            if part.leaves.is_empty() {
                continue;
            }
            let ts_ns: i64 = part.ts_ns.extract(py)?;
            let device = part.device.bind(py).cast::<PyString>()?.clone();
            for leaf in &part.leaves {
                let v = core::Value {
                    ts_ns,
                    device: device.clone(),
                    interface: leaf.interface.bind(py).cast::<PyString>()?.clone(),
                    metric: leaf.metric.bind(py).clone(),
                    value: leaf.value.bind(py).clone(),
                    qualifier: leaf.qualifier.bind(py).cast::<PyString>()?.clone(),
                };
                core::fold_value(&mut rates, &mut health, &v, &out, events)?;
            }
            values += part.leaves.len();
            last_ts = Some(ts_ns);
        }
        let telling = parts
            .into_iter()
            .filter(|p| {
                p.unknown + p.unattributed + p.bad + p.pathless > 0
                    || !p.unit.is(&self.ns_unit)
                    || p.lldp.is_some()
                    || p.lldp_deletes.is_some()
            })
            .map(|p| Part {
                leaves: Vec::new(), // folded already
                ..p
            })
            .collect();
        Ok((values, last_ts, telling))
    }
}

#[pymodule]
fn _walk(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Walker>()?;
    m.add_class::<Part>()?;
    m.add_class::<core::RatesCore>()?;
    m.add_class::<core::HealthCore>()?;
    m.add_function(wrap_pyfunction!(core::normalize, m)?)?;
    Ok(())
}
