"""Statistics: summary figures (the statistics module), Welch's t-test and t quantiles
with a Student t CDF of our own.

The t CDF uses the regularized incomplete beta function I_x(a, b), evaluated with the
continued fraction of Numerical Recipes (Lentz's method), so no third-party package is
needed.
"""
import math
import statistics

ALPHA = 0.05          # two-sided significance level of the t-test
NOISE_FACTOR = 2.0    # fallback: change > NOISE_FACTOR x combined stddev


def mean(xs):
    return statistics.fmean(xs)


def median(xs):
    return statistics.median(xs)


def variance(xs):
    """Sample variance (n - 1 in the denominator); 0 for a single value."""
    xs = list(xs)
    return statistics.variance(xs) if len(xs) >= 2 else 0.0


def stddev(xs):
    return math.sqrt(variance(xs))


def pstddev(xs):
    """Standard deviation as a percentage of the mean (0 when the mean is 0)."""
    m = mean(xs)
    return 100.0 * stddev(xs) / abs(m) if m else 0.0


def summarize(xs):
    xs = [float(x) for x in xs]
    return {
        "runs": len(xs), "median": median(xs), "mean": mean(xs), "stddev": stddev(xs),
        "pstddev": pstddev(xs), "min": min(xs), "max": max(xs),
    }


def _betacf(a, b, x, max_iter=300, eps=3e-16):
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < tiny:
        d = tiny
    d = 1.0 / d
    h = d
    for m in range(1, max_iter + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < tiny:
            d = tiny
        c = 1.0 + aa / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < tiny:
            d = tiny
        c = 1.0 + aa / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            return h
    raise ArithmeticError("incomplete beta: continued fraction did not converge "
                          "(a=%g b=%g x=%g)" % (a, b, x))


def betainc(a, b, x):
    """Regularized incomplete beta function I_x(a, b) for a, b > 0, 0 <= x <= 1."""
    if a <= 0 or b <= 0:
        raise ValueError("betainc needs a, b > 0")
    if x < 0.0 or x > 1.0:
        raise ValueError("betainc needs 0 <= x <= 1")
    if x == 0.0 or x == 1.0:
        return x
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf2(t, df):
    """Two-sided p-value P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom must be > 0")
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t_cdf(t, df):
    """Student t cumulative distribution function."""
    p2 = t_sf2(t, df)
    return 1.0 - p2 / 2.0 if t >= 0 else p2 / 2.0


def t_ppf(q, df):
    """Quantile of Student's t: the t with t_cdf(t, df) = q (bisection, 0 < q < 1)."""
    if not 0.0 < q < 1.0:
        raise ValueError("t_ppf needs 0 < q < 1")
    if q < 0.5:
        return -t_ppf(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def welch(a, b):
    """Welch's unequal-variance t-test on two samples.

    Returns dict(t, df, p) with a two-sided p. Needs at least 2 values per side.
    When both variances are 0 the test is undefined: p is 0 if the means differ (an
    exact, deterministic change) and 1 if they are equal; t and df are then None.
    """
    a = [float(x) for x in a]
    b = [float(x) for x in b]
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least 2 samples per side")
    ma, mb = mean(a), mean(b)
    va, vb = variance(a) / len(a), variance(b) / len(b)
    se2 = va + vb
    if se2 == 0.0:
        return {"t": None, "df": None, "p": 0.0 if ma != mb else 1.0}
    t = (ma - mb) / math.sqrt(se2)
    df = se2 * se2 / ((va * va) / (len(a) - 1) + (vb * vb) / (len(b) - 1))
    return {"t": t, "df": df, "p": t_sf2(t, df)}


def noise_test(mean_a, sd_a, mean_b, sd_b, factor=NOISE_FACTOR):
    """Fallback when raw samples are missing: is |b - a| > factor * sqrt(sd_a^2 + sd_b^2)?"""
    combined = math.sqrt(sd_a * sd_a + sd_b * sd_b)
    return abs(mean_b - mean_a) > factor * combined


def pct_change(base, new):
    """Percentage change of new against base (None when base is 0)."""
    if base == 0:
        return None
    return 100.0 * (new - base) / abs(base)
