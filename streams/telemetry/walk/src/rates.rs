//! Counter readings into per-second rates: `rates.CounterRates`' rules, compiled.
//!
//! The rules are `rates.CounterRates`' (see its docstring): a decrease is a wrap of the
//! narrowest width the previous reading fits in when the movement is at most
//! `wrap_max_fraction` of that width, else a reset (reported once per `reset_quiet_s` of the
//! series); readings not newer than the last are ignored. The arithmetic is Python's, so the
//! rates are bit for bit the ones `CounterRates` gives: integer counters subtract exactly, an
//! integer meets a float as Python compares them (exactly), and a difference becomes a float by
//! rounding to nearest, as `int.__truediv__` does.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use crate::pyops::{int_le_float, int_lt_float};

/// A counter reading: an exact integer (the decoders keep counters below 2**64; i128 also
/// holds what a caller may hand in beyond that) or a float (a counter a target sent with a
/// fraction).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(n) => n as f64,
            Num::Float(x) => x,
        }
    }
}

/// A difference of two readings, kept exact while both are integers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Diff {
    Int(i128),
    Float(f64),
}

impl Diff {
    fn of(current: Num, last: Num) -> Diff {
        match (current, last) {
            (Num::Int(a), Num::Int(b)) => match a.checked_sub(b) {
                Some(d) => Diff::Int(d),
                None => Diff::Float(a as f64 - b as f64),
            },
            _ => Diff::Float(current.as_f64() - last.as_f64()),
        }
    }

    fn negative(self) -> bool {
        match self {
            Diff::Int(n) => n < 0,
            Diff::Float(x) => x < 0.0,
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Diff::Int(n) => n as f64,
            Diff::Float(x) => x,
        }
    }
}

/// Counter widths a wrap can be taken across, narrowest first.
const WRAP_WIDTHS: [u128; 2] = [1 << 32, 1 << 64];

/// What one reading gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// Nothing: the series' first reading (a baseline), a reading not newer than the last,
    /// or a reset within the quiet time of the last one reported.
    Nothing,
    /// A rate over the interval since the last reading.
    Rate { rate: f64, interval_s: f64 },
    /// A reset to report: the counter fell from `last`; the reading is the new baseline.
    Reset { last: Num },
}

/// The counts `RateStats` shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub samples: u64,
    pub wraps: u64,
    pub resets: u64,
    pub out_of_order: u64,
}

/// The last reading of every counter series of one device, keyed by the series' index.
#[derive(Debug, Default)]
pub struct Rates {
    pub wrap_max_fraction: f64,
    pub reset_quiet_s: f64,
    pub stats: Stats,
    pub(crate) last: HashMap<u32, (i64, Num), FxBuildHasher>,
    pub(crate) reset_at: HashMap<u32, i64, FxBuildHasher>,
}

impl Rates {
    pub fn new(wrap_max_fraction: f64, reset_quiet_s: f64) -> Self {
        Rates {
            wrap_max_fraction,
            reset_quiet_s,
            ..Default::default()
        }
    }

    /// The outcome of a counter reading of `series` at `ts_ns`.
    pub fn counter(&mut self, series: u32, ts_ns: i64, value: Num) -> Outcome {
        let last = self.last.get(&series).copied();
        if let Some((last_ts, _)) = last {
            if ts_ns <= last_ts {
                self.stats.out_of_order += 1;
                return Outcome::Nothing;
            }
        }
        self.last.insert(series, (ts_ns, value));
        let Some((last_ts, last_value)) = last else {
            return Outcome::Nothing;
        };
        let mut delta = Diff::of(value, last_value);
        if delta.negative() {
            match self.across_wrap(last_value, value) {
                None => {
                    self.stats.resets += 1;
                    if let Some(reported) = self.reset_at.get(&series) {
                        let quiet_ns = self.reset_quiet_s * 1e9;
                        if int_lt_float(ts_ns as i128 - *reported as i128, quiet_ns) {
                            return Outcome::Nothing;
                        }
                    }
                    self.reset_at.insert(series, ts_ns);
                    return Outcome::Reset { last: last_value };
                }
                Some(moved) => {
                    self.stats.wraps += 1;
                    delta = moved;
                }
            }
        }
        let interval_s = (ts_ns as i128 - last_ts as i128) as f64 / 1e9;
        self.stats.samples += 1;
        Outcome::Rate {
            rate: delta.as_f64() / interval_s,
            interval_s,
        }
    }

    /// How far the counter moved if it wrapped from `last` to `current`; None if implausible.
    fn across_wrap(&self, last: Num, current: Num) -> Option<Diff> {
        for width in WRAP_WIDTHS {
            let fits = match last {
                Num::Int(n) => n < width as i128,
                Num::Float(x) => x < width as f64,
            };
            if !fits {
                continue;
            }
            let limit = width as f64 * self.wrap_max_fraction;
            return match (last, current) {
                (Num::Int(l), Num::Int(c)) => {
                    let moved = (width as i128 - l).checked_add(c)?;
                    int_le_float(moved, limit).then_some(Diff::Int(moved))
                }
                _ => {
                    let moved = width as f64 - last.as_f64() + current.as_f64();
                    (moved <= limit).then_some(Diff::Float(moved))
                }
            };
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn rates() -> Rates {
        Rates::new(0.25, 300.0)
    }

    #[test]
    fn the_first_reading_is_a_baseline_and_the_next_a_rate() {
        let mut r = rates();
        assert_eq!(r.counter(1, 10 * S, Num::Int(100)), Outcome::Nothing);
        assert_eq!(
            r.counter(1, 20 * S, Num::Int(1100)),
            Outcome::Rate {
                rate: 100.0,
                interval_s: 10.0
            }
        );
        assert_eq!(r.stats.samples, 1);
    }

    #[test]
    fn a_reading_not_newer_than_the_last_is_ignored_and_counted() {
        let mut r = rates();
        r.counter(1, 10 * S, Num::Int(100));
        assert_eq!(r.counter(1, 10 * S, Num::Int(200)), Outcome::Nothing);
        assert_eq!(r.counter(1, 5 * S, Num::Int(200)), Outcome::Nothing);
        assert_eq!(r.stats.out_of_order, 2);
    }

    #[test]
    fn a_32_bit_counter_near_its_top_wraps() {
        let mut r = rates();
        r.counter(1, 0, Num::Int((1 << 32) - 100));
        let got = r.counter(1, S, Num::Int(50));
        assert_eq!(
            got,
            Outcome::Rate {
                rate: 150.0,
                interval_s: 1.0
            }
        );
        assert_eq!(r.stats.wraps, 1);
    }

    #[test]
    fn a_64_bit_counter_wraps_exactly() {
        let mut r = rates();
        r.counter(1, 0, Num::Int(u64::MAX as i128 - 9));
        let got = r.counter(1, S, Num::Int(5));
        assert_eq!(
            got,
            Outcome::Rate {
                rate: 15.0,
                interval_s: 1.0
            }
        );
    }

    #[test]
    fn a_fall_too_far_for_a_wrap_is_a_reset_reported_once_per_quiet_time() {
        let mut r = rates();
        r.counter(1, 0, Num::Int(5_000_000_000));
        assert_eq!(
            r.counter(1, S, Num::Int(10)),
            Outcome::Reset {
                last: Num::Int(5_000_000_000)
            }
        );
        r.counter(1, 2 * S, Num::Int(5_000_000_000));
        assert_eq!(r.counter(1, 3 * S, Num::Int(1)), Outcome::Nothing);
        assert_eq!(r.stats.resets, 2);
        r.counter(1, 400 * S, Num::Int(5_000_000_000));
        assert!(matches!(
            r.counter(1, 401 * S, Num::Int(1)),
            Outcome::Reset { .. }
        ));
    }

    #[test]
    fn an_integer_meets_the_wrap_limit_as_python_compares_them() {
        // 2**62 is the limit of a 64-bit wrap at a quarter; one more is not a wrap.
        let mut r = rates();
        let last = (1u128 << 64) - (1u128 << 62) - 1;
        r.counter(1, 0, Num::Int(last as i128));
        assert!(matches!(
            r.counter(1, S, Num::Int(0)),
            Outcome::Reset { .. }
        ));
    }

    #[test]
    fn a_fractional_counter_subtracts_as_floats() {
        let mut r = rates();
        r.counter(1, 0, Num::Float(0.5));
        assert_eq!(
            r.counter(1, 2 * S, Num::Int(3)),
            Outcome::Rate {
                rate: 1.25,
                interval_s: 2.0
            }
        );
    }
}
