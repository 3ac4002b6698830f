//! Link health over a device's rate samples: `health.LinkHealth`'s rules, compiled.
//!
//! The rules are `health.LinkHealth`'s, per series of one device: latches that fire when a
//! condition is entered and re-arm after `rearm_quiet_s` clear, and baselines (EWMAs) that a
//! sample teaches only when it is no anomaly: traffic drops, frame-error bursts judged as a
//! share of the link's frames, pre-FEC rises over the series' own level, uncorrectable FEC,
//! low rx power, speed-down, PFC pause groups per direction, oper-status changes and flaps
//! (from oper changes or carrier transitions). The maps keep insertion order, as Python's
//! dicts did, so the snapshot (`health_state`) lists its rows in the order it always has. An
//! event's words stay in Python: an `Event` carries the numbers (and names) they are made of.

use std::collections::VecDeque;

use indexmap::IndexMap as Ordered;
use rustc_hash::FxBuildHasher;

/// Python's dicts keep insertion order, and the snapshot is laid out in it.
type IndexMap<K, V> = Ordered<K, V, FxBuildHasher>;

use crate::pyops::{int_ge_float, int_le_float};

/// `Thresholds`' fields the rules written so far read (same names, same defaults).
#[derive(Clone, Debug)]
pub struct Thresholds {
    pub error_rate_per_s: f64,
    pub error_ratio_min: f64,
    pub error_ratio_rise: f64,
    pub error_baseline_samples: u64,
    pub error_baseline_alpha: f64,
    pub frame_bytes: f64,
    pub symbol_error_rise: f64,
    pub symbol_error_floor_per_s: f64,
    pub symbol_baseline_samples: u64,
    pub symbol_baseline_alpha: f64,
    pub fec_uncorrectable_per_s: f64,
    pub rx_power_low_dbm: f64,
    pub pfc_pause_per_s: f64,
    pub flap_changes: usize,
    pub flap_window_s: f64,
    pub traffic_drop_fraction: f64,
    pub traffic_min_baseline_bytes_per_s: f64,
    pub traffic_ewma_alpha: f64,
    pub traffic_warmup_samples: u64,
    pub rearm_quiet_s: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            error_rate_per_s: 1.0,
            error_ratio_min: 1e-7,
            error_ratio_rise: 10.0,
            error_baseline_samples: 6,
            error_baseline_alpha: 0.1,
            frame_bytes: 4200.0,
            symbol_error_rise: 100.0,
            symbol_error_floor_per_s: 1000.0,
            symbol_baseline_samples: 6,
            symbol_baseline_alpha: 0.1,
            fec_uncorrectable_per_s: 0.0,
            rx_power_low_dbm: -10.0,
            pfc_pause_per_s: 5000.0,
            flap_changes: 3,
            flap_window_s: 60.0,
            traffic_drop_fraction: 0.05,
            traffic_min_baseline_bytes_per_s: 1e8,
            traffic_ewma_alpha: 0.2,
            traffic_warmup_samples: 3,
            rearm_quiet_s: 60.0,
        }
    }
}

/// The metrics the rules watch, as the walk numbers them (`WATCHED_METRICS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    InOctets,
    OutOctets,
    InErrors,
    InFcsErrors,
    OutErrors,
    SymbolErrors,
    FecCorrected,
    FecUncorrectable,
    RxPowerDbm,
    PortSpeedGbps,
    PfcRxPause,
    PfcTxPause,
    CarrierTransitions,
    OperStatus,
}

/// The event kinds the rules raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    TrafficDrop,
    ErrorBurst,
    PreFecErrors,
    FecUncorrectable,
    RxPowerLow,
    SpeedDown,
    PfcStorm,
    PfcPausing,
    Down,
    Up,
    Flap,
}

/// oper-status values that mean the link carries no traffic (`DOWN_STATES`).
const DOWN_STATES: [&str; 4] = ["down", "lower_layer_down", "not_present", "dormant"];

/// A series' own level and how many samples taught it (`health_state.Baseline`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Baseline {
    pub ewma: f64,
    pub samples: u64,
}

impl Baseline {
    fn learn(&mut self, value: f64, alpha: f64) {
        self.ewma += alpha * (value - self.ewma);
        self.samples += 1;
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Latch {
    pub(crate) active: bool,
    pub(crate) last_bad_ns: i64,
}

/// One rate sample of an interface's series (`LinkSample`), the interface as the walk's index.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub ts_ns: i64,
    pub interface: u32,
    pub metric: Metric,
    pub qualifier: u32,
    pub rate: f64,
    pub interval_s: f64,
}

/// An event entered, with the numbers its words are made of (the level it was judged
/// against, or the share of frames lost); the qualifier index says which lane or counter, the
/// qualifiers which PFC priorities, `state` the oper-status that went down.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub ts_ns: i64,
    pub interface: u32,
    pub kind: Kind,
    pub metric: Metric,
    pub qualifier: u32,
    pub value: f64,
    pub interval_s: f64,
    pub level: Option<f64>,
    pub ratio: Option<f64>,
    pub qualifiers: Vec<u32>,
    pub state: Option<String>,
}

impl Event {
    fn of(s: &Sample, kind: Kind) -> Event {
        Event {
            ts_ns: s.ts_ns,
            interface: s.interface,
            kind,
            metric: s.metric,
            qualifier: s.qualifier,
            value: s.rate,
            interval_s: s.interval_s,
            level: None,
            ratio: None,
            qualifiers: Vec::new(),
            state: None,
        }
    }
}

/// PFC pause rates of one direction at one timestamp, summed as they arrive.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PauseGroup {
    pub(crate) ts_ns: i64,
    pub(crate) total: f64,
    pub(crate) qualifiers: Vec<u32>,
}

/// One device's health state for the rules written so far.
#[derive(Debug, Default)]
pub struct Health {
    pub thresholds: Thresholds,
    pub(crate) latches: IndexMap<(u32, Kind, u32, Option<Metric>), Latch>,
    pub(crate) baselines: IndexMap<(u32, Metric), Baseline>,
    pub(crate) pre_fec: IndexMap<(u32, Metric, u32), Baseline>,
    pub(crate) seen: IndexMap<(u32, Metric, u32), i64>,
    /// Last oper-status time and whether the link was down then (None: no up/down seen yet).
    pub(crate) oper: IndexMap<u32, (i64, Option<bool>)>,
    pub(crate) changes: IndexMap<u32, VecDeque<i64>>,
    pub(crate) carrier: IndexMap<u32, VecDeque<(i64, i64)>>,
    /// Keyed by interface and direction (true: rx).
    pub(crate) pause: IndexMap<(u32, bool), PauseGroup>,
}

impl Health {
    pub fn new(thresholds: Thresholds) -> Self {
        Health {
            thresholds,
            ..Default::default()
        }
    }

    /// Whether the condition holds at `ts_ns`; true when it is being entered.
    fn latch(&mut self, key: (u32, Kind, u32, Option<Metric>), ts_ns: i64, bad: bool) -> bool {
        if bad {
            return match self.latches.get_mut(&key) {
                None => {
                    self.latches.insert(
                        key,
                        Latch {
                            active: true,
                            last_bad_ns: ts_ns,
                        },
                    );
                    true
                }
                Some(latch) => {
                    let entering = !latch.active;
                    latch.active = true;
                    latch.last_bad_ns = ts_ns;
                    entering
                }
            };
        }
        let quiet_ns = self.thresholds.rearm_quiet_s * 1e9;
        if let Some(latch) = self.latches.get_mut(&key) {
            if latch.active && int_ge_float(ts_ns as i128 - latch.last_bad_ns as i128, quiet_ns) {
                latch.active = false;
            }
        }
        false
    }

    /// The events a sample causes, usually none.
    pub fn sample(&mut self, s: &Sample) -> Vec<Event> {
        let series = (s.interface, s.metric, s.qualifier);
        if let Some(last) = self.seen.get(&series) {
            if s.ts_ns <= *last {
                return Vec::new();
            }
        }
        self.seen.insert(series, s.ts_ns);
        let t = self.thresholds.clone();
        match s.metric {
            Metric::InErrors | Metric::InFcsErrors | Metric::OutErrors => self.errors(s),
            Metric::SymbolErrors | Metric::FecCorrected => self.pre_fec(s),
            Metric::FecUncorrectable => {
                let bad = s.rate > t.fec_uncorrectable_per_s;
                self.enter(s, Kind::FecUncorrectable, bad, None, None)
            }
            Metric::RxPowerDbm => {
                let bad = s.rate <= t.rx_power_low_dbm;
                self.enter(s, Kind::RxPowerLow, bad, None, None)
            }
            Metric::InOctets | Metric::OutOctets => self.octets(s),
            Metric::PortSpeedGbps => self.speed(s),
            Metric::OperStatus => Vec::new(), // a state, not a sample: see `oper`
            Metric::PfcRxPause => self.pause(s, true),
            Metric::PfcTxPause => self.pause(s, false),
            Metric::CarrierTransitions => {
                let increments = (s.rate * s.interval_s).round_ties_even() as i64;
                if increments > 0 {
                    self.carrier
                        .entry(s.interface)
                        .or_default()
                        .push_back((s.ts_ns, increments));
                }
                self.flap(s.ts_ns, s.interface)
            }
        }
    }

    /// The events an oper-status reading of `interface` causes (`state` lower-cased).
    pub fn oper(&mut self, ts_ns: i64, interface: u32, state: &str) -> Vec<Event> {
        let last = self.oper.get(&interface).copied();
        if let Some((last_ts, _)) = last {
            if ts_ns <= last_ts {
                return Vec::new();
            }
        }
        let was_down = last.and_then(|(_, down)| down);
        let down = if state == "up" {
            false
        } else if DOWN_STATES.contains(&state) {
            true
        } else {
            self.oper.insert(interface, (ts_ns, was_down));
            return Vec::new();
        };
        self.oper.insert(interface, (ts_ns, Some(down)));
        if was_down == Some(down) {
            return Vec::new();
        }
        let mut events = Vec::new();
        let state_event = |kind: Kind, state: Option<String>| Event {
            ts_ns,
            interface,
            kind,
            metric: Metric::OperStatus,
            qualifier: 0,
            value: 0.0,
            interval_s: 0.0,
            level: None,
            ratio: None,
            qualifiers: Vec::new(),
            state,
        };
        if down {
            events.push(state_event(Kind::Down, Some(state.to_owned())));
        } else if was_down == Some(true) {
            events.push(state_event(Kind::Up, None));
        }
        if was_down.is_some() {
            self.changes.entry(interface).or_default().push_back(ts_ns);
        }
        events.extend(self.flap(ts_ns, interface));
        events
    }

    /// FLAP when oper changes, or carrier-transition increments, in the window reach the
    /// threshold; the larger of the two counts, since both see the same flaps.
    fn flap(&mut self, ts_ns: i64, interface: u32) -> Vec<Event> {
        // Python's `ts_ns - window * 1e9` is a float; each stamp is held against it exactly.
        let since = ts_ns as f64 - self.thresholds.flap_window_s * 1e9;
        let gone = |t: i64| int_le_float(t as i128, since);
        let mut count = 0;
        if let Some(changes) = self.changes.get_mut(&interface) {
            while changes.front().is_some_and(|t| gone(*t)) {
                changes.pop_front();
            }
            count = changes.len();
        }
        if let Some(carrier) = self.carrier.get_mut(&interface) {
            while carrier.front().is_some_and(|(t, _)| gone(*t)) {
                carrier.pop_front();
            }
            count = count.max(carrier.iter().map(|(_, n)| *n).sum::<i64>().max(0) as usize);
        }
        let bad = count >= self.thresholds.flap_changes;
        if !self.latch((interface, Kind::Flap, 0, None), ts_ns, bad) {
            return Vec::new();
        }
        vec![Event {
            ts_ns,
            interface,
            kind: Kind::Flap,
            metric: Metric::CarrierTransitions,
            qualifier: 0,
            value: count as f64,
            interval_s: 0.0,
            level: None,
            ratio: None,
            qualifiers: Vec::new(),
            state: None,
        }]
    }

    /// SPEED_DOWN when a port negotiates below the highest speed it had; back at full speed
    /// is clear at once.
    fn speed(&mut self, s: &Sample) -> Vec<Event> {
        let key = (s.interface, s.metric);
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // as Python reads `s.rate > best.ewma`
        let best = match self.baselines.get(&key) {
            Some(b) if !(s.rate > b.ewma) => *b,
            _ => {
                let b = Baseline {
                    ewma: s.rate,
                    samples: 1,
                };
                self.baselines.insert(key, b);
                b
            }
        };
        let latch = (s.interface, Kind::SpeedDown, 0, None);
        if s.rate >= best.ewma {
            self.latches.shift_remove(&latch);
            return Vec::new();
        }
        if !self.latch(latch, s.ts_ns, true) {
            return Vec::new();
        }
        let mut event = Event::of(s, Kind::SpeedDown);
        event.level = Some(best.ewma);
        vec![event]
    }

    /// PFC_STORM (pauses received) or PFC_PAUSING (sent) on one direction's sum over the
    /// priorities of one timestamp, checked as each priority arrives; a timestamp's group is
    /// judged clear once the next one of that direction arrives.
    fn pause(&mut self, s: &Sample, rx: bool) -> Vec<Event> {
        let threshold = self.thresholds.pfc_pause_per_s;
        let kind = if rx { Kind::PfcStorm } else { Kind::PfcPausing };
        let latch = (s.interface, kind, u32::from(rx), None);
        let group = self.pause.get(&(s.interface, rx)).cloned();
        if let Some(g) = &group {
            if s.ts_ns < g.ts_ns {
                return Vec::new();
            }
        }
        let mut group = match group {
            Some(g) if g.ts_ns == s.ts_ns => g,
            other => {
                if let Some(old) = other {
                    if old.total < threshold {
                        self.latch(latch, old.ts_ns, false);
                    }
                }
                PauseGroup {
                    ts_ns: s.ts_ns,
                    total: 0.0,
                    qualifiers: Vec::new(),
                }
            }
        };
        group.total += s.rate;
        group.qualifiers.push(s.qualifier);
        let total = group.total;
        let qualifiers = group.qualifiers.clone();
        self.pause.insert((s.interface, rx), group);
        if total < threshold || !self.latch(latch, s.ts_ns, true) {
            return Vec::new();
        }
        let mut event = Event::of(s, kind);
        event.value = total;
        event.qualifiers = qualifiers;
        vec![event]
    }

    fn enter(
        &mut self,
        s: &Sample,
        kind: Kind,
        bad: bool,
        level: Option<f64>,
        ratio: Option<f64>,
    ) -> Vec<Event> {
        if !self.latch(
            (s.interface, kind, s.qualifier, Some(s.metric)),
            s.ts_ns,
            bad,
        ) {
            return Vec::new();
        }
        let mut event = Event::of(s, kind);
        event.level = level;
        event.ratio = ratio;
        vec![event]
    }

    fn errors(&mut self, s: &Sample) -> Vec<Event> {
        let t = self.thresholds.clone();
        let way = if s.metric == Metric::OutErrors {
            Metric::OutOctets
        } else {
            Metric::InOctets
        };
        let frames = match self.baselines.get(&(s.interface, way)) {
            Some(traffic) if traffic.samples >= t.traffic_warmup_samples => {
                traffic.ewma / t.frame_bytes
            }
            _ => 0.0,
        };
        let level = self.baselines.get(&(s.interface, s.metric)).copied();
        let (bad, ratio, own) = if s.rate < t.error_rate_per_s {
            (false, None, None)
        } else if frames <= 0.0 {
            (true, None, None)
        } else {
            let ratio = s.rate / frames;
            let trusted = level.is_some_and(|l| l.samples >= t.error_baseline_samples);
            let own = if trusted {
                level.map_or(0.0, |l| l.ewma)
            } else {
                0.0
            };
            let bad = ratio >= t.error_ratio_min.max(t.error_ratio_rise * own);
            (bad, Some(ratio), trusted.then_some(own))
        };
        let events = self.enter(s, Kind::ErrorBurst, bad, own, ratio);
        if !bad && frames > 0.0 {
            let share = s.rate / frames;
            match self.baselines.get_mut(&(s.interface, s.metric)) {
                None => {
                    self.baselines.insert(
                        (s.interface, s.metric),
                        Baseline {
                            ewma: share,
                            samples: 1,
                        },
                    );
                }
                Some(level) => level.learn(share, t.error_baseline_alpha),
            }
        }
        events
    }

    fn pre_fec(&mut self, s: &Sample) -> Vec<Event> {
        let t = self.thresholds.clone();
        let key = (s.interface, s.metric, s.qualifier);
        let Some(baseline) = self.pre_fec.get(&key).copied() else {
            self.pre_fec.insert(
                key,
                Baseline {
                    ewma: s.rate,
                    samples: 1,
                },
            );
            return Vec::new();
        };
        let level = baseline.ewma;
        let bad = baseline.samples >= t.symbol_baseline_samples
            && s.rate >= t.symbol_error_floor_per_s.max(t.symbol_error_rise * level);
        let events = self.enter(s, Kind::PreFecErrors, bad, Some(level), None);
        if s.rate
            < t.symbol_error_floor_per_s
                .max(t.symbol_error_rise / 10.0 * level)
        {
            if let Some(b) = self.pre_fec.get_mut(&key) {
                b.learn(s.rate, t.symbol_baseline_alpha);
            }
        }
        events
    }

    fn octets(&mut self, s: &Sample) -> Vec<Event> {
        if s.qualifier != 0 {
            return Vec::new();
        }
        let t = self.thresholds.clone();
        let key = (s.interface, s.metric);
        let Some(baseline) = self.baselines.get(&key).copied() else {
            self.baselines.insert(
                key,
                Baseline {
                    ewma: s.rate,
                    samples: 1,
                },
            );
            return Vec::new();
        };
        let trusted = baseline.samples >= t.traffic_warmup_samples
            && baseline.ewma >= t.traffic_min_baseline_bytes_per_s;
        let dropped = trusted && s.rate < t.traffic_drop_fraction * baseline.ewma;
        let latch = (s.interface, Kind::TrafficDrop, 0, Some(s.metric));
        let mut events = Vec::new();
        if self.latch(latch, s.ts_ns, dropped) {
            let mut event = Event::of(s, Kind::TrafficDrop);
            event.level = Some(baseline.ewma);
            events.push(event);
        }
        if !dropped {
            if let Some(b) = self.baselines.get_mut(&key) {
                b.learn(s.rate, t.traffic_ewma_alpha);
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn octets(ts: i64, rate: f64) -> Sample {
        Sample {
            ts_ns: ts * S,
            interface: 1,
            metric: Metric::InOctets,
            qualifier: 0,
            rate,
            interval_s: 10.0,
        }
    }

    #[test]
    fn a_drop_below_the_trusted_baseline_is_one_event_until_the_latch_rearms() {
        let mut h = Health::new(Thresholds::default());
        for i in 0..4 {
            assert!(h.sample(&octets(i * 10, 1e10)).is_empty());
        }
        let first = h.sample(&octets(40, 1e6));
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].kind, Kind::TrafficDrop);
        assert_eq!(first[0].level, Some(1e10));
        assert!(
            h.sample(&octets(50, 1e6)).is_empty(),
            "latched: one event per drop"
        );
        // Clear for less than the quiet time, then dark again: still the same drop.
        h.sample(&octets(60, 1e10));
        assert!(h.sample(&octets(70, 1e6)).is_empty());
        // Clear for the whole quiet time re-arms it.
        for i in 8..16 {
            h.sample(&octets(i * 10, 1e10));
        }
        assert_eq!(h.sample(&octets(160, 1e6)).len(), 1);
    }

    #[test]
    fn a_sample_not_newer_than_its_series_last_changes_nothing() {
        let mut h = Health::new(Thresholds::default());
        for i in 0..4 {
            h.sample(&octets(i * 10, 1e10));
        }
        assert!(h.sample(&octets(30, 1e6)).is_empty());
        assert_eq!(h.baselines[&(1, Metric::InOctets)].samples, 4);
    }

    fn sample(ts: i64, metric: Metric, qualifier: u32, rate: f64) -> Sample {
        Sample {
            ts_ns: ts * S,
            interface: 1,
            metric,
            qualifier,
            rate,
            interval_s: 10.0,
        }
    }

    #[test]
    fn three_state_changes_in_the_window_are_one_flap() {
        let mut h = Health::new(Thresholds::default());
        assert!(
            h.oper(0, 1, "up").is_empty(),
            "the first state is no change"
        );
        let down = h.oper(10 * S, 1, "lower_layer_down");
        assert_eq!(down.len(), 1);
        assert_eq!(down[0].state.as_deref(), Some("lower_layer_down"));
        assert_eq!(h.oper(20 * S, 1, "up")[0].kind, Kind::Up);
        let third = h.oper(30 * S, 1, "down");
        assert_eq!(
            third.iter().map(|e| e.kind).collect::<Vec<_>>(),
            [Kind::Down, Kind::Flap]
        );
        assert_eq!(third[1].value, 3.0);
        assert!(h.oper(30 * S, 1, "up").is_empty(), "not newer: ignored");
        assert!(
            h.oper(40 * S, 1, "testing").is_empty(),
            "says nothing either way"
        );
    }

    #[test]
    fn carrier_transitions_count_towards_a_flap() {
        let mut h = Health::new(Thresholds::default());
        let carrier = |ts: i64, per_s: f64| sample(ts, Metric::CarrierTransitions, 0, per_s);
        assert!(h.sample(&carrier(10, 0.1)).is_empty());
        let flap = h.sample(&carrier(20, 0.2));
        assert_eq!(flap.len(), 1);
        assert_eq!(flap[0].kind, Kind::Flap);
        // 0.25 x 10 s rounds half to even: 2 increments, as Python's round.
        assert!(h.sample(&carrier(200, 0.25)).is_empty());
    }

    #[test]
    fn a_pfc_storm_is_the_sum_over_one_timestamps_priorities() {
        let mut h = Health::new(Thresholds::default());
        assert!(h
            .sample(&sample(10, Metric::PfcRxPause, 3, 3000.0))
            .is_empty());
        let storm = h.sample(&sample(10, Metric::PfcRxPause, 4, 3000.0));
        assert_eq!(storm.len(), 1);
        assert_eq!((storm[0].kind, storm[0].value), (Kind::PfcStorm, 6000.0));
        assert_eq!(storm[0].qualifiers, [3, 4]);
        assert!(
            h.sample(&sample(10, Metric::PfcTxPause, 3, 100.0))
                .is_empty(),
            "sent: apart"
        );
        assert!(
            h.sample(&sample(20, Metric::PfcRxPause, 3, 6000.0))
                .is_empty(),
            "latched"
        );
    }

    #[test]
    fn a_port_below_its_best_speed_is_speed_down_until_back() {
        let mut h = Health::new(Thresholds::default());
        assert!(h
            .sample(&sample(10, Metric::PortSpeedGbps, 0, 800.0))
            .is_empty());
        let down = h.sample(&sample(20, Metric::PortSpeedGbps, 0, 400.0));
        assert_eq!(
            (down[0].kind, down[0].level),
            (Kind::SpeedDown, Some(800.0))
        );
        assert!(h
            .sample(&sample(30, Metric::PortSpeedGbps, 0, 800.0))
            .is_empty());
        assert_eq!(
            h.sample(&sample(40, Metric::PortSpeedGbps, 0, 400.0)).len(),
            1
        );
    }

    #[test]
    fn errors_are_judged_as_a_share_of_the_links_frames() {
        let mut h = Health::new(Thresholds::default());
        for i in 0..4 {
            h.sample(&octets(i * 10, 4.2e9)); // a million frames a second
        }
        let errors = |ts: i64, rate: f64| Sample {
            ts_ns: ts * S,
            interface: 1,
            metric: Metric::InErrors,
            qualifier: 0,
            rate,
            interval_s: 10.0,
        };
        // 0.05 errors per million frames: under the 1e-7 floor.
        assert!(h.sample(&errors(40, 0.05)).is_empty());
        // 5 a second of a million: 5e-6 of the frames, a burst.
        let burst = h.sample(&errors(50, 5.0));
        assert_eq!(burst.len(), 1);
        assert_eq!(burst[0].ratio, Some(5e-6));
    }
}
