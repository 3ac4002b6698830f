//! Python's comparisons of an integer with a float, exactly: the rules' arithmetic is
//! Python's, where `ts_ns - last <= window * 1e9` compares the integer with the float's exact
//! value, not with the integer rounded to a float.

/// What an integer is compared with, for a float `x`: nothing (NaN, where every comparison is
/// false), more or less than every i128, or `x`'s floor and whether `x` is whole.
enum Against {
    Nan,
    Above,
    Below,
    Floor(i128, bool),
}

fn against(x: f64) -> Against {
    if x.is_nan() {
        Against::Nan
    } else if x >= 1.7e38 {
        Against::Above
    } else if x <= -1.7e38 {
        Against::Below
    } else {
        let floor = x.floor();
        Against::Floor(floor as i128, floor == x)
    }
}

/// `n <= x` for an integer and a float, exactly, as Python compares them.
pub fn int_le_float(n: i128, x: f64) -> bool {
    match against(x) {
        Against::Nan | Against::Below => false,
        Against::Above => true,
        Against::Floor(floor, _) => n <= floor,
    }
}

/// `n < x` for an integer and a float, exactly.
pub fn int_lt_float(n: i128, x: f64) -> bool {
    match against(x) {
        Against::Nan | Against::Below => false,
        Against::Above => true,
        Against::Floor(floor, whole) => n < floor || (!whole && n == floor),
    }
}

/// `n >= x` for an integer and a float, exactly.
pub fn int_ge_float(n: i128, x: f64) -> bool {
    !x.is_nan() && !int_lt_float(n, x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_meets_a_float_at_its_exact_value() {
        // 2**53 + 1 rounds to 2**53 as a float; Python still tells them apart.
        let n = (1i128 << 53) + 1;
        let x = (1u64 << 53) as f64;
        assert!(!int_le_float(n, x) && !int_lt_float(n, x) && int_ge_float(n, x));
        assert!(int_le_float(3, 3.0) && !int_lt_float(3, 3.0));
        assert!(int_le_float(3, 3.5) && int_lt_float(3, 3.5) && !int_lt_float(4, 3.5));
        assert!(int_lt_float(-4, -3.5) && !int_le_float(-3, -3.5));
    }

    #[test]
    fn nan_compares_false_and_the_infinities_past_every_integer() {
        for f in [int_le_float, int_lt_float, int_ge_float] {
            assert!(!f(0, f64::NAN));
        }
        assert!(int_lt_float(i128::MAX, f64::INFINITY));
        assert!(!int_le_float(i128::MIN, f64::NEG_INFINITY));
        assert!(int_ge_float(i128::MIN, f64::NEG_INFINITY));
    }
}
