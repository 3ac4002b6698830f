//! Python's comparisons of an integer with a float, exactly: the rules' arithmetic is
//! Python's, where `ts_ns - last <= window * 1e9` compares the integer with the float's exact
//! value, not with the integer rounded to a float.

/// `n <= x` for an integer and a float, exactly, as Python compares them.
pub fn int_le_float(n: i128, x: f64) -> bool {
    if x.is_nan() {
        return false;
    }
    if x >= 1.7e38 {
        return true;
    }
    if x <= -1.7e38 {
        return false;
    }
    n <= x.floor() as i128
}

/// `n < x` for an integer and a float, exactly.
pub fn int_lt_float(n: i128, x: f64) -> bool {
    if x.is_nan() {
        return false;
    }
    if x >= 1.7e38 {
        return true;
    }
    if x <= -1.7e38 {
        return false;
    }
    let floor = x.floor();
    if floor == x {
        n < floor as i128
    } else {
        n <= floor as i128
    }
}

/// `n >= x` for an integer and a float, exactly.
pub fn int_ge_float(n: i128, x: f64) -> bool {
    !x.is_nan() && !int_lt_float(n, x)
}
