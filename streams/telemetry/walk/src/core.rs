//! The Python face of the compiled counter rates and link health: `RatesCore` behind
//! `rates.CounterRates`, `HealthCore` behind `health.LinkHealth`, and `normalize`, which runs a
//! batch of TelemetryValues through both in one call (the `Normalizer`'s loop).
//!
//! The state lives here, keyed by interned names, so a value costs hash lookups and no Python
//! objects but the LinkSample it makes. What is not per value stays in Python: an event's
//! words (an event leaves here as the numbers they are made of), the snapshots' JSON layouts
//! (their rows leave and enter here in the order Python's dicts kept them, so a snapshot is
//! the one the Python rules wrote) and their validation.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxBuildHasher;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::health::{Baseline, Event, Health, Kind, Latch, Metric, PauseGroup, Sample, Thresholds};
use crate::rates::{Num, Outcome, Rates};

type Map<K, V> = HashMap<K, V, FxBuildHasher>;

/// The next `HealthCore.serial`.
static SERIALS: AtomicU64 = AtomicU64::new(1);

/// Interfaces (device, interface) and qualifiers, numbered in the order first seen; qualifier
/// 0 is "", which the rules read as "no qualifier".
struct Names {
    by_device: Map<String, Map<String, u32>>,
    ifaces: Vec<(Py<PyString>, Py<PyString>)>,
    by_qualifier: Map<String, u32>,
    qualifiers: Vec<Py<PyString>>,
    /// The last interface named, by the identity of its two strings (held, so the identity
    /// cannot be reused): a message's values all name the same one.
    last: Option<(Py<PyString>, Py<PyString>, u32)>,
}

/// A Python str as the key it is interned under (lone surrogates read with replacement).
fn key_of<'a>(s: &'a Bound<'_, PyString>) -> std::borrow::Cow<'a, str> {
    match s.to_str() {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => s.to_string_lossy(),
    }
}

fn as_str<'py>(value: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyString>> {
    value
        .cast::<PyString>()
        .cloned()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a str")))
}

impl Names {
    fn new(py: Python<'_>) -> Self {
        Names {
            by_device: Map::default(),
            ifaces: Vec::new(),
            by_qualifier: Map::from_iter([(String::new(), 0)]),
            qualifiers: vec![PyString::new(py, "").unbind()],
            last: None,
        }
    }

    fn iface(&mut self, device: &Bound<'_, PyString>, interface: &Bound<'_, PyString>) -> u32 {
        if let Some((d, i, n)) = &self.last {
            if d.as_ptr() == device.as_ptr() && i.as_ptr() == interface.as_ptr() {
                return *n;
            }
        }
        let n = self.iface_by_name(device, interface);
        self.last = Some((device.clone().unbind(), interface.clone().unbind(), n));
        n
    }

    fn iface_by_name(
        &mut self,
        device: &Bound<'_, PyString>,
        interface: &Bound<'_, PyString>,
    ) -> u32 {
        let (d, i) = (key_of(device), key_of(interface));
        if let Some(n) = self
            .by_device
            .get(d.as_ref())
            .and_then(|m| m.get(i.as_ref()))
        {
            return *n;
        }
        let n = self.ifaces.len() as u32;
        self.by_device
            .entry(d.into_owned())
            .or_default()
            .insert(i.into_owned(), n);
        self.ifaces
            .push((device.clone().unbind(), interface.clone().unbind()));
        n
    }

    fn qualifier(&mut self, qualifier: &Bound<'_, PyString>) -> u32 {
        if qualifier.len().is_ok_and(|n| n == 0) {
            return 0;
        }
        let q = key_of(qualifier);
        if let Some(n) = self.by_qualifier.get(q.as_ref()) {
            return *n;
        }
        let n = self.qualifiers.len() as u32;
        self.by_qualifier.insert(q.into_owned(), n);
        self.qualifiers.push(qualifier.clone().unbind());
        n
    }

    fn device<'py>(&self, py: Python<'py>, iface: u32) -> &Bound<'py, PyString> {
        self.ifaces[iface as usize].0.bind(py)
    }

    fn interface<'py>(&self, py: Python<'py>, iface: u32) -> &Bound<'py, PyString> {
        self.ifaces[iface as usize].1.bind(py)
    }

    fn qualifier_name<'py>(&self, py: Python<'py>, qualifier: u32) -> &Bound<'py, PyString> {
        self.qualifiers[qualifier as usize].bind(py)
    }
}

/// What a metric is to the rules: counter (rated), gauge (passed through), watched by the
/// health rules (as which), or none of these.
#[derive(Clone, Copy)]
struct MetricInfo {
    counter: bool,
    gauge: bool,
    health: Option<Metric>,
}

/// The metrics the cores were told about, found by identity first (the Metric members) and
/// by value for an equal str.
struct Metrics {
    members: Vec<(Py<PyAny>, String, MetricInfo)>,
}

/// The health rules' metrics by their `Metric` value (`WATCHED_METRICS` and oper-status).
const METRIC_NAMES: [(Metric, &str); 14] = [
    (Metric::InOctets, "in_octets"),
    (Metric::OutOctets, "out_octets"),
    (Metric::InErrors, "in_errors"),
    (Metric::InFcsErrors, "in_fcs_errors"),
    (Metric::OutErrors, "out_errors"),
    (Metric::SymbolErrors, "symbol_errors"),
    (Metric::FecCorrected, "fec_corrected"),
    (Metric::FecUncorrectable, "fec_uncorrectable"),
    (Metric::RxPowerDbm, "rx_power_dbm"),
    (Metric::PortSpeedGbps, "port_speed_gbps"),
    (Metric::PfcRxPause, "pfc_rx_pause"),
    (Metric::PfcTxPause, "pfc_tx_pause"),
    (Metric::CarrierTransitions, "carrier_transitions"),
    (Metric::OperStatus, "oper_status"),
];

/// The event kinds by their `LinkEventKind` value.
const KIND_NAMES: [(Kind, &str); 11] = [
    (Kind::TrafficDrop, "traffic-drop"),
    (Kind::ErrorBurst, "error-burst"),
    (Kind::PreFecErrors, "pre-fec-errors"),
    (Kind::FecUncorrectable, "fec-uncorrectable"),
    (Kind::RxPowerLow, "rx-power-low"),
    (Kind::SpeedDown, "speed-down"),
    (Kind::PfcStorm, "pfc-storm"),
    (Kind::PfcPausing, "pfc-pausing"),
    (Kind::Down, "down"),
    (Kind::Up, "up"),
    (Kind::Flap, "flap"),
];

fn by_name<T: Copy>(table: &[(T, &str)], name: &str) -> Option<T> {
    table.iter().find(|(_, n)| *n == name).map(|(t, _)| *t)
}

fn name_of<T: PartialEq>(table: &[(T, &'static str)], item: T) -> &'static str {
    table
        .iter()
        .find(|(t, _)| *t == item)
        .map_or("", |(_, n)| n)
}

fn health_metric(name: &str) -> Option<Metric> {
    by_name(&METRIC_NAMES, name)
}

fn metric_name(metric: Metric) -> &'static str {
    name_of(&METRIC_NAMES, metric)
}

fn kind_name(kind: Kind) -> &'static str {
    name_of(&KIND_NAMES, kind)
}

impl Metrics {
    fn new(members: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut out = Vec::new();
        for item in members.try_iter()? {
            let (member, counter, gauge): (Bound<'_, PyAny>, bool, bool) = item?.extract()?;
            let name = as_str(&member, "a metric")?.to_str()?.to_owned();
            let info = MetricInfo {
                counter,
                gauge,
                health: health_metric(&name),
            };
            out.push((member.unbind(), name, info));
        }
        Ok(Metrics { members: out })
    }

    /// Where `metric` is among the members: by identity, else by value.
    fn position(&self, metric: &Bound<'_, PyAny>) -> Option<usize> {
        let ptr = metric.as_ptr();
        if let Some(at) = self.members.iter().position(|(m, _, _)| m.as_ptr() == ptr) {
            return Some(at);
        }
        let name = key_of(metric.cast::<PyString>().ok()?).into_owned();
        self.members.iter().position(|(_, n, _)| *n == name)
    }

    /// Where `metric` is among the members, and what it is to the rules.
    fn info(&self, metric: &Bound<'_, PyAny>) -> Option<(usize, MetricInfo)> {
        self.position(metric).map(|at| (at, self.members[at].2))
    }

    /// The Metric member of a health-rule metric, for snapshots and events.
    fn member<'py>(&self, py: Python<'py>, metric: Metric) -> PyResult<Bound<'py, PyAny>> {
        let name = metric_name(metric);
        self.members
            .iter()
            .find(|(_, n, _)| n == name)
            .map(|(m, _, _)| m.bind(py).clone())
            .ok_or_else(|| PyValueError::new_err(format!("metric {name} was not given")))
    }
}

/// A counter reading as the rates keep it; None for what is no number (a state).
fn num_of(value: &Bound<'_, PyAny>) -> Option<Num> {
    if value.is_instance_of::<PyInt>() {
        return Some(match value.extract::<i128>() {
            Ok(n) => Num::Int(n),
            // Past i128 (no decoder gives it): kept as the float Python would compute with.
            Err(_) => Num::Float(value.extract::<f64>().unwrap_or(f64::INFINITY)),
        });
    }
    if value.is_instance_of::<PyFloat>() {
        return value.extract::<f64>().ok().map(Num::Float);
    }
    None
}

fn py_num<'py>(py: Python<'py>, n: Num) -> PyResult<Bound<'py, PyAny>> {
    Ok(match n {
        Num::Int(i) => i.into_pyobject(py)?.into_any(),
        Num::Float(x) => PyFloat::new(py, x).into_any(),
    })
}

/// The value's fields the rules read.
pub(crate) struct Value<'py> {
    pub(crate) ts_ns: i64,
    pub(crate) device: Bound<'py, PyString>,
    pub(crate) interface: Bound<'py, PyString>,
    pub(crate) metric: Bound<'py, PyAny>,
    pub(crate) value: Bound<'py, PyAny>,
    pub(crate) qualifier: Bound<'py, PyString>,
}

impl<'py> Value<'py> {
    fn of(v: &Bound<'py, PyAny>) -> PyResult<Self> {
        let py = v.py();
        Ok(Value {
            ts_ns: v.getattr(intern!(py, "ts_ns"))?.extract()?,
            device: as_str(&v.getattr(intern!(py, "device"))?, "device")?,
            interface: as_str(&v.getattr(intern!(py, "interface"))?, "interface")?,
            metric: v.getattr(intern!(py, "metric"))?,
            value: v.getattr(intern!(py, "value"))?,
            qualifier: as_str(&v.getattr(intern!(py, "qualifier"))?, "qualifier")?,
        })
    }
}

/// `rates.CounterRates`' state and rules (`rates.rs`), keyed by interned series.
#[pyclass(module = "railtrace.streams.telemetry._walk")]
pub struct RatesCore {
    rates: Rates,
    names: Names,
    metrics: Metrics,
    /// Per interface, its series: (metric's position, qualifier, series); a handful each.
    by_iface: Vec<Vec<(usize, u32, u32)>>,
    /// (interface, metric member, qualifier) of each series, in the order first read.
    series: Vec<(u32, Py<PyAny>, u32)>,
    /// Each series' (interface, qualifier) in the HealthCore `health_of` names, which
    /// `normalize` fills as it goes: the names are the same, the numbering the other core's.
    health_ids: Vec<Option<(u32, u32)>>,
    health_of: u64,
    /// Per interface, where its samples go on the wire: (link id, partition).
    routes: Vec<Option<(Py<PyAny>, Py<PyAny>)>>,
}

impl RatesCore {
    /// The series of `v`, whose metric is member `metric` of `self.metrics`.
    fn series_of(&mut self, v: &Value<'_>, metric: usize) -> u32 {
        let iface = self.names.iface(&v.device, &v.interface);
        let qualifier = self.names.qualifier(&v.qualifier);
        if self.by_iface.len() <= iface as usize {
            self.by_iface.resize_with(iface as usize + 1, Vec::new);
        }
        let known = &mut self.by_iface[iface as usize];
        if let Some((_, _, n)) = known
            .iter()
            .find(|(m, q, _)| *m == metric && *q == qualifier)
        {
            return *n;
        }
        let n = self.series.len() as u32;
        known.push((metric, qualifier, n));
        let member = self.metrics.members[metric].0.clone_ref(v.metric.py());
        self.series.push((iface, member, qualifier));
        self.health_ids.push(None);
        n
    }

    /// The rate (or gauge reading) and interval, the reading a reset fell from, and the
    /// series (of counters) that a value of metric member `metric` gives.
    fn read(&mut self, v: &Value<'_>, (metric, info): (usize, MetricInfo)) -> PyResult<Read> {
        let py = v.metric.py();
        let mut read = Read::default();
        if v.value.is_instance_of::<PyString>() || !(info.counter || info.gauge) {
            return Ok(read);
        }
        if !info.counter {
            let gauge: f64 = v.value.call_method0(intern!(py, "__float__"))?.extract()?;
            self.rates.stats.samples += 1;
            read.rated = Some((gauge, 0.0));
            return Ok(read);
        }
        let Some(num) = num_of(&v.value) else {
            let shown = v.value.repr()?;
            return Err(PyValueError::new_err(format!(
                "a counter reading must be a number, not {shown}"
            )));
        };
        let series = self.series_of(v, metric);
        match self.rates.counter(series, v.ts_ns, num) {
            Outcome::Nothing => {}
            Outcome::Reset { last } => read.fell_from = Some(last),
            Outcome::Rate { rate, interval_s } => {
                read.rated = Some((rate, interval_s));
                read.series = Some(series);
            }
        }
        Ok(read)
    }

    /// Where samples of `iface` go: (link id, partition), asked of `route` once.
    fn route<'py>(
        &mut self,
        iface: u32,
        v: &Value<'py>,
        route: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let py = route.py();
        let at = iface as usize;
        if self.routes.len() <= at {
            self.routes.resize_with(at + 1, || None);
        }
        if let Some((link, partition)) = &self.routes[at] {
            return Ok((link.bind(py).clone(), partition.bind(py).clone()));
        }
        let found = route.call1((&v.device, &v.interface))?;
        let (link, partition) = (found.get_item(0)?, found.get_item(1)?);
        self.routes[at] = Some((link.clone().unbind(), partition.clone().unbind()));
        Ok((link, partition))
    }
}

/// A value's LinkSample and the reading its counter fell from, as `RatesCore.update` gives.
type Update<'py> = (Option<Bound<'py, PyAny>>, Option<Bound<'py, PyAny>>);

/// What one value gave the rates.
#[derive(Default)]
struct Read {
    rated: Option<(f64, f64)>,
    fell_from: Option<Num>,
    series: Option<u32>,
}

/// The LinkSample (made with `sample_type`) of a value's rate.
fn link_sample<'py>(
    sample_type: &Bound<'py, PyAny>,
    v: &Value<'py>,
    rate: f64,
    interval_s: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let fields = (
        v.ts_ns,
        &v.device,
        &v.interface,
        &v.metric,
        &v.qualifier,
        rate,
        interval_s,
    );
    sample_type.call1(fields)
}

/// Where a fold's samples go.
pub(crate) enum Samples<'a, 'py> {
    /// LinkSample objects made with `sample_type`, appended to `list` (the Normalizer's way).
    Objects {
        sample_type: &'a Bound<'py, PyAny>,
        list: &'a Bound<'py, PyList>,
    },
    /// Rows for the wire, (ts_ns, link id, device, interface, metric, qualifier, rate,
    /// interval_s), in `by_partition[partition]`, where `route(device, interface)` gives
    /// (link id, partition) once per interface: the telemetry stage's way.
    Rows {
        route: &'a Bound<'py, PyAny>,
        by_partition: &'a Bound<'py, PyDict>,
    },
}

/// One value through the rates and then the health rules: its sample to `samples`, and to
/// `events` a reset (`("counter-reset", ts_ns, device, interface, metric, qualifier, value,
/// reading it fell from)`) or the health events (tuples, see `HealthCore.event`).
pub(crate) fn fold_value<'py>(
    rates: &mut RatesCore,
    health: &mut HealthCore,
    v: &Value<'py>,
    samples: &Samples<'_, 'py>,
    events: &Bound<'py, PyList>,
) -> PyResult<()> {
    let py = events.py();
    let Some(found) = rates.metrics.info(&v.metric) else {
        return Ok(());
    };
    let info = found.1;
    if info.counter || info.gauge {
        let read = rates.read(v, found)?;
        if let Some(last) = read.fell_from {
            let raw = (
                intern!(py, "counter-reset"),
                v.ts_ns,
                &v.device,
                &v.interface,
                &v.metric,
                &v.qualifier,
                &v.value,
                py_num(py, last)?,
            );
            events.append(raw)?;
        }
        let Some((rate, interval_s)) = read.rated else {
            return Ok(());
        };
        match samples {
            Samples::Objects { sample_type, list } => {
                list.append(link_sample(sample_type, v, rate, interval_s)?)?;
            }
            Samples::Rows {
                route,
                by_partition,
            } => {
                let iface = rates.names.iface(&v.device, &v.interface);
                let (link, partition) = rates.route(iface, v, route)?;
                let rows = match by_partition.get_item(&partition)? {
                    Some(rows) => rows.cast_into::<PyList>()?,
                    None => {
                        let rows = PyList::empty(py);
                        by_partition.set_item(&partition, &rows)?;
                        rows
                    }
                };
                let row = (
                    v.ts_ns,
                    link,
                    &v.device,
                    &v.interface,
                    &v.metric,
                    &v.qualifier,
                    rate,
                    interval_s,
                );
                rows.append(row)?;
            }
        }
        if let Some(m) = info.health.filter(|m| *m != Metric::OperStatus) {
            let cached = read.series.and_then(|n| rates.health_ids[n as usize]);
            let (interface, qualifier) = match cached {
                Some(ids) => ids,
                None => {
                    let ids = (
                        health.names.iface(&v.device, &v.interface),
                        health.names.qualifier(&v.qualifier),
                    );
                    if let Some(n) = read.series {
                        rates.health_ids[n as usize] = Some(ids);
                    }
                    ids
                }
            };
            let s = Sample {
                ts_ns: v.ts_ns,
                interface,
                metric: m,
                qualifier,
                rate,
                interval_s,
            };
            let found = health.health.sample(&s);
            health.events(py, found, events)?;
        }
    } else if info.health == Some(Metric::OperStatus) {
        if let Ok(state) = v.value.cast::<PyString>() {
            let iface = health.names.iface(&v.device, &v.interface);
            let found = health.health.oper(v.ts_ns, iface, &key_of(state));
            health.events(py, found, events)?;
        }
    }
    Ok(())
}

/// Pair the caches of `rates` with `health`'s numbering.
pub(crate) fn pair(rates: &mut RatesCore, health: &HealthCore) {
    if rates.health_of != health.serial {
        // Another HealthCore numbers the names its own way.
        rates.health_ids.iter_mut().for_each(|ids| *ids = None);
        rates.health_of = health.serial;
    }
}

#[pymethods]
impl RatesCore {
    #[new]
    fn new(
        py: Python<'_>,
        wrap_max_fraction: f64,
        reset_quiet_s: f64,
        metrics: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Ok(RatesCore {
            rates: Rates::new(wrap_max_fraction, reset_quiet_s),
            names: Names::new(py),
            metrics: Metrics::new(metrics)?,
            by_iface: Vec::new(),
            series: Vec::new(),
            health_ids: Vec::new(),
            health_of: 0,
            routes: Vec::new(),
        })
    }

    /// (sample or None, the reading the counter fell from or None) for one TelemetryValue.
    fn update<'py>(
        &mut self,
        value: &Bound<'py, PyAny>,
        sample_type: &Bound<'py, PyAny>,
    ) -> PyResult<Update<'py>> {
        let py = value.py();
        let v = Value::of(value)?;
        let Some(found) = self.metrics.info(&v.metric) else {
            return Ok((None, None));
        };
        let read = self.read(&v, found)?;
        let sample = match read.rated {
            None => None,
            Some((rate, interval_s)) => Some(link_sample(sample_type, &v, rate, interval_s)?),
        };
        let reset = read.fell_from.map(|n| py_num(py, n)).transpose()?;
        Ok((sample, reset))
    }

    /// (samples, wraps, resets, out_of_order).
    fn stats(&self) -> (u64, u64, u64, u64) {
        let s = self.rates.stats;
        (s.samples, s.wraps, s.resets, s.out_of_order)
    }

    fn set_stats(&mut self, samples: u64, wraps: u64, resets: u64, out_of_order: u64) {
        self.rates.stats = crate::rates::Stats {
            samples,
            wraps,
            resets,
            out_of_order,
        };
    }

    /// Every counter's (device, interface, metric, qualifier, ts_ns, value, reset ts or
    /// None), in the order first read.
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (n, (iface, metric, qualifier)) in self.series.iter().enumerate() {
            let n = n as u32;
            let Some((ts_ns, value)) = self.rates.last.get(&n) else {
                continue;
            };
            let row = (
                self.names.device(py, *iface),
                self.names.interface(py, *iface),
                metric.bind(py),
                self.names.qualifier_name(py, *qualifier),
                *ts_ns,
                py_num(py, *value)?,
                self.rates.reset_at.get(&n).copied(),
            );
            out.append(row)?;
        }
        Ok(out)
    }

    /// Take rows as `rows` gives them (already validated), after the state of a new core.
    fn load(&mut self, rows: &Bound<'_, PyAny>) -> PyResult<()> {
        for row in rows.try_iter()? {
            let row = row?;
            let t = row.cast::<PyTuple>()?;
            let (device, interface, metric, qualifier) = (
                as_str(&t.get_item(0)?, "device")?,
                as_str(&t.get_item(1)?, "interface")?,
                t.get_item(2)?,
                as_str(&t.get_item(3)?, "qualifier")?,
            );
            let ts_ns: i64 = t.get_item(4)?.extract()?;
            let value = t.get_item(5)?;
            let Some(num) = num_of(&value) else {
                return Err(PyValueError::new_err("a counter value must be a number"));
            };
            let reset: Option<i64> = t.get_item(6)?.extract()?;
            let v = Value {
                ts_ns,
                device,
                interface,
                metric,
                value,
                qualifier,
            };
            let metric = self
                .metrics
                .position(&v.metric)
                .ok_or_else(|| PyValueError::new_err(format!("an unknown metric {}", v.metric)))?;
            let series = self.series_of(&v, metric);
            self.rates.last.insert(series, (ts_ns, num));
            if let Some(at) = reset {
                self.rates.reset_at.insert(series, at);
            }
        }
        Ok(())
    }
}

/// `health.LinkHealth`'s state and rules (`health.rs`), keyed by interned interfaces.
#[pyclass(module = "railtrace.streams.telemetry._walk")]
pub struct HealthCore {
    /// Which HealthCore this is, for the RatesCore caches of its numbering (never 0).
    serial: u64,
    health: Health,
    names: Names,
    metrics: Metrics,
}

fn threshold(thresholds: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    thresholds.getattr(name)?.extract()
}

fn count(thresholds: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    thresholds.getattr(name)?.extract()
}

/// An event's qualifier, the name the latch holds it under (`sub`) and the text of `where`.
fn where_of(metric: &str, qualifier: &str) -> String {
    if qualifier.is_empty() {
        metric.to_owned()
    } else {
        format!("{metric}[{qualifier}]")
    }
}

impl HealthCore {
    fn sample_of(
        &mut self,
        sample: &Bound<'_, PyAny>,
        metric: Metric,
        rate: f64,
        interval_s: f64,
    ) -> PyResult<Sample> {
        let py = sample.py();
        let device = as_str(&sample.getattr(intern!(py, "device"))?, "device")?;
        let interface = as_str(&sample.getattr(intern!(py, "interface"))?, "interface")?;
        let qualifier = as_str(&sample.getattr(intern!(py, "qualifier"))?, "qualifier")?;
        Ok(Sample {
            ts_ns: sample.getattr(intern!(py, "ts_ns"))?.extract()?,
            interface: self.names.iface(&device, &interface),
            metric,
            qualifier: self.names.qualifier(&qualifier),
            rate,
            interval_s,
        })
    }

    /// An event as the tuple `health.LinkHealth` words: (kind, ts_ns, device, interface,
    /// metric, qualifier, value, interval_s, level, ratio, qualifiers, state).
    fn event<'py>(&self, py: Python<'py>, e: &Event) -> PyResult<Bound<'py, PyTuple>> {
        let qualifiers = e
            .qualifiers
            .iter()
            .map(|q| self.names.qualifier_name(py, *q).clone())
            .collect::<Vec<_>>();
        (
            kind_name(e.kind),
            e.ts_ns,
            self.names.device(py, e.interface),
            self.names.interface(py, e.interface),
            self.metrics.member(py, e.metric)?,
            self.names.qualifier_name(py, e.qualifier),
            e.value,
            e.interval_s,
            e.level,
            e.ratio,
            qualifiers,
            e.state.as_deref(),
        )
            .into_pyobject(py)
    }

    fn events<'py>(
        &self,
        py: Python<'py>,
        events: Vec<Event>,
        out: &Bound<'py, PyList>,
    ) -> PyResult<()> {
        for e in &events {
            out.append(self.event(py, e)?)?;
        }
        Ok(())
    }

    /// The latch's `sub` as `LinkHealth` names it.
    fn sub(&self, py: Python<'_>, kind: Kind, qualifier: u32, metric: Option<Metric>) -> String {
        let q = key_of(self.names.qualifier_name(py, qualifier)).into_owned();
        match kind {
            Kind::TrafficDrop => metric.map(metric_name).unwrap_or_default().to_owned(),
            Kind::ErrorBurst | Kind::PreFecErrors => {
                where_of(metric.map(metric_name).unwrap_or_default(), &q)
            }
            Kind::FecUncorrectable | Kind::RxPowerLow => q,
            Kind::PfcStorm | Kind::PfcPausing => {
                if qualifier == 1 { "rx" } else { "tx" }.to_owned()
            }
            Kind::Flap | Kind::SpeedDown | Kind::Down | Kind::Up => String::new(),
        }
    }

    /// The latch key a restored (kind, sub) names; None for one no rule makes.
    fn latch_key(
        &mut self,
        py: Python<'_>,
        iface: u32,
        kind: Kind,
        sub: &str,
    ) -> Option<(u32, Kind, u32, Option<Metric>)> {
        let mut qualifier = |q: &str| self.names.qualifier(&PyString::new(py, q));
        Some(match kind {
            Kind::TrafficDrop => (iface, kind, 0, Some(health_metric(sub)?)),
            Kind::ErrorBurst | Kind::PreFecErrors => {
                let (metric, q) = match sub.split_once('[') {
                    Some((m, rest)) => (m, rest.strip_suffix(']')?),
                    None => (sub, ""),
                };
                (iface, kind, qualifier(q), Some(health_metric(metric)?))
            }
            Kind::FecUncorrectable => (iface, kind, qualifier(sub), Some(Metric::FecUncorrectable)),
            Kind::RxPowerLow => (iface, kind, qualifier(sub), Some(Metric::RxPowerDbm)),
            Kind::PfcStorm | Kind::PfcPausing => match sub {
                "rx" => (iface, kind, 1, None),
                "tx" => (iface, kind, 0, None),
                _ => return None,
            },
            Kind::Flap | Kind::SpeedDown if sub.is_empty() => (iface, kind, 0, None),
            _ => return None,
        })
    }
}

#[pymethods]
impl HealthCore {
    #[new]
    fn new(
        py: Python<'_>,
        thresholds: &Bound<'_, PyAny>,
        metrics: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let t = thresholds;
        let health = Health::new(Thresholds {
            error_rate_per_s: threshold(t, "error_rate_per_s")?,
            error_ratio_min: threshold(t, "error_ratio_min")?,
            error_ratio_rise: threshold(t, "error_ratio_rise")?,
            error_baseline_samples: count(t, "error_baseline_samples")?,
            error_baseline_alpha: threshold(t, "error_baseline_alpha")?,
            frame_bytes: threshold(t, "frame_bytes")?,
            symbol_error_rise: threshold(t, "symbol_error_rise")?,
            symbol_error_floor_per_s: threshold(t, "symbol_error_floor_per_s")?,
            symbol_baseline_samples: count(t, "symbol_baseline_samples")?,
            symbol_baseline_alpha: threshold(t, "symbol_baseline_alpha")?,
            fec_uncorrectable_per_s: threshold(t, "fec_uncorrectable_per_s")?,
            rx_power_low_dbm: threshold(t, "rx_power_low_dbm")?,
            pfc_pause_per_s: threshold(t, "pfc_pause_per_s")?,
            flap_changes: count(t, "flap_changes")? as usize,
            flap_window_s: threshold(t, "flap_window_s")?,
            traffic_drop_fraction: threshold(t, "traffic_drop_fraction")?,
            traffic_min_baseline_bytes_per_s: threshold(t, "traffic_min_baseline_bytes_per_s")?,
            traffic_ewma_alpha: threshold(t, "traffic_ewma_alpha")?,
            traffic_warmup_samples: count(t, "traffic_warmup_samples")?,
            rearm_quiet_s: threshold(t, "rearm_quiet_s")?,
        });
        Ok(HealthCore {
            serial: SERIALS.fetch_add(1, Ordering::Relaxed),
            health,
            names: Names::new(py),
            metrics: Metrics::new(metrics)?,
        })
    }

    /// The events (as tuples, see `event`) a LinkSample causes.
    fn sample<'py>(&mut self, sample: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let py = sample.py();
        let out = PyList::empty(py);
        let metric = sample.getattr(intern!(py, "metric"))?;
        let Some((
            _,
            MetricInfo {
                health: Some(m), ..
            },
        )) = self.metrics.info(&metric)
        else {
            return Ok(out);
        };
        if m == Metric::OperStatus {
            return Ok(out);
        }
        let rate: f64 = sample.getattr(intern!(py, "rate"))?.extract()?;
        let interval_s: f64 = sample.getattr(intern!(py, "interval_s"))?.extract()?;
        let s = self.sample_of(sample, m, rate, interval_s)?;
        let events = self.health.sample(&s);
        self.events(py, events, &out)?;
        Ok(out)
    }

    /// The events an oper-status reading (a lower-case state) causes.
    fn oper<'py>(
        &mut self,
        ts_ns: i64,
        device: &Bound<'py, PyString>,
        interface: &Bound<'py, PyString>,
        state: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyList>> {
        let py = device.py();
        let out = PyList::empty(py);
        let iface = self.names.iface(device, interface);
        let events = self.health.oper(ts_ns, iface, &key_of(state));
        self.events(py, events, &out)?;
        Ok(out)
    }

    /// The state as rows per part, each row led by (device, interface) and in the order
    /// `HealthState`'s dicts keep: `HealthState.snapshot` lays them out.
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = &self.health;
        let names = &self.names;
        let at = |i: u32| (names.device(py, i), names.interface(py, i));
        let out = PyDict::new(py);
        let list = |name: &str| -> PyResult<Bound<'py, PyList>> {
            let l = PyList::empty(py);
            out.set_item(name, &l)?;
            Ok(l)
        };
        let oper = list("oper")?;
        for (i, (ts, down)) in &h.oper {
            let (d, f) = at(*i);
            oper.append((d, f, *ts, *down))?;
        }
        let changes = list("changes")?;
        for (i, ts) in &h.changes {
            let (d, f) = at(*i);
            changes.append((d, f, ts.iter().copied().collect::<Vec<_>>()))?;
        }
        let carrier = list("carrier")?;
        for (i, c) in &h.carrier {
            let (d, f) = at(*i);
            carrier.append((d, f, c.iter().copied().collect::<Vec<_>>()))?;
        }
        let latches = list("latches")?;
        for ((i, kind, q, m), latch) in &h.latches {
            let (d, f) = at(*i);
            let sub = self.sub(py, *kind, *q, *m);
            latches.append((d, f, kind_name(*kind), sub, latch.active, latch.last_bad_ns))?;
        }
        let pause = list("pause")?;
        for ((i, rx), g) in &h.pause {
            let (d, f) = at(*i);
            let quals: Vec<_> = g
                .qualifiers
                .iter()
                .map(|q| names.qualifier_name(py, *q))
                .collect();
            pause.append((d, f, if *rx { "rx" } else { "tx" }, g.ts_ns, g.total, quals))?;
        }
        let baselines = list("baselines")?;
        for ((i, m), b) in &h.baselines {
            let (d, f) = at(*i);
            baselines.append((d, f, self.metrics.member(py, *m)?, b.ewma, b.samples))?;
        }
        let pre_fec = list("pre_fec")?;
        for ((i, m, q), b) in &h.pre_fec {
            let (d, f) = at(*i);
            let row = (
                d,
                f,
                self.metrics.member(py, *m)?,
                names.qualifier_name(py, *q),
                b.ewma,
                b.samples,
            );
            pre_fec.append(row)?;
        }
        let seen = list("seen")?;
        for ((i, m, q), ts) in &h.seen {
            let (d, f) = at(*i);
            seen.append((
                d,
                f,
                self.metrics.member(py, *m)?,
                names.qualifier_name(py, *q),
                *ts,
            ))?;
        }
        Ok(out)
    }

    /// Take one row of one part, as `rows` gives them (values already decoded); rows of a
    /// part come in their order. Raises ValueError for a row no rule could have made.
    fn load(&mut self, part: &str, row: &Bound<'_, PyTuple>) -> PyResult<()> {
        let py = row.py();
        let device = as_str(&row.get_item(0)?, "device")?;
        let interface = as_str(&row.get_item(1)?, "interface")?;
        let i = self.names.iface(&device, &interface);
        let metric = |at: usize| -> PyResult<Metric> {
            let m = row.get_item(at)?;
            health_metric(&key_of(&as_str(&m, "metric")?))
                .filter(|m| *m != Metric::OperStatus)
                .ok_or_else(|| PyValueError::new_err(format!("no rule keeps a level of {m}")))
        };
        match part {
            "oper" => {
                let (ts, down): (i64, Option<bool>) =
                    (row.get_item(2)?.extract()?, row.get_item(3)?.extract()?);
                self.health.oper.insert(i, (ts, down));
            }
            "changes" => {
                let ts: Vec<i64> = row.get_item(2)?.extract()?;
                self.health.changes.insert(i, VecDeque::from(ts));
            }
            "carrier" => {
                let c: Vec<(i64, i64)> = row.get_item(2)?.extract()?;
                self.health.carrier.insert(i, VecDeque::from(c));
            }
            "latches" => {
                let kind: String = row.get_item(2)?.extract()?;
                let sub: String = row.get_item(3)?.extract()?;
                let latch = Latch {
                    active: row.get_item(4)?.extract()?,
                    last_bad_ns: row.get_item(5)?.extract()?,
                };
                let key = by_name(&KIND_NAMES, &kind)
                    .and_then(|k| self.latch_key(py, i, k, &sub))
                    .ok_or_else(|| {
                        PyValueError::new_err(format!("no rule latches {kind} on {sub:?}"))
                    })?;
                self.health.latches.insert(key, latch);
            }
            "pause" => {
                let direction: String = row.get_item(2)?.extract()?;
                let rx = match direction.as_str() {
                    "rx" => true,
                    "tx" => false,
                    _ => {
                        return Err(PyValueError::new_err(format!(
                            "pause direction {direction:?}"
                        )))
                    }
                };
                let quals: Vec<Bound<'_, PyAny>> = row.get_item(5)?.extract()?;
                let qualifiers = quals
                    .iter()
                    .map(|q| Ok(self.names.qualifier(&as_str(q, "qualifier")?)))
                    .collect::<PyResult<Vec<_>>>()?;
                let group = PauseGroup {
                    ts_ns: row.get_item(3)?.extract()?,
                    total: row.get_item(4)?.extract()?,
                    qualifiers,
                };
                self.health.pause.insert((i, rx), group);
            }
            "baselines" => {
                let b = Baseline {
                    ewma: row.get_item(3)?.extract()?,
                    samples: row.get_item(4)?.extract()?,
                };
                self.health.baselines.insert((i, metric(2)?), b);
            }
            "pre_fec" => {
                let q = self
                    .names
                    .qualifier(&as_str(&row.get_item(3)?, "qualifier")?);
                let b = Baseline {
                    ewma: row.get_item(4)?.extract()?,
                    samples: row.get_item(5)?.extract()?,
                };
                self.health.pre_fec.insert((i, metric(2)?, q), b);
            }
            "seen" => {
                let q = self
                    .names
                    .qualifier(&as_str(&row.get_item(3)?, "qualifier")?);
                self.health
                    .seen
                    .insert((i, metric(2)?, q), row.get_item(4)?.extract()?);
            }
            _ => return Err(PyValueError::new_err(format!("unknown part {part:?}"))),
        }
        Ok(())
    }
}

/// A batch of TelemetryValues through the rates and then the health rules (`fold_value`):
/// LinkSamples appended to `samples`, resets and health events to `events` in the order
/// they happen.
#[pyfunction]
pub fn normalize<'py>(
    rates: &Bound<'py, RatesCore>,
    health: &Bound<'py, HealthCore>,
    values: &Bound<'py, PyAny>,
    sample_type: &Bound<'py, PyAny>,
    samples: &Bound<'py, PyList>,
    events: &Bound<'py, PyList>,
) -> PyResult<()> {
    let mut rates = rates.borrow_mut();
    let mut health = health.borrow_mut();
    pair(&mut rates, &health);
    let out = Samples::Objects {
        sample_type,
        list: samples,
    };
    for value in values.try_iter()? {
        let v = Value::of(&value?)?;
        fold_value(&mut rates, &mut health, &v, &out, events)?;
    }
    Ok(())
}
