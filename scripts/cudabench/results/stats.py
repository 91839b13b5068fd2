"""The statistics: medians, the noise floor an A/A run measured, and the
distribution-free interval of one side's speed against another's."""
import math
import random
from statistics import NormalDist

from ..base.errors import BadInput
from ..base.files import read_json
from .gbench import HIGHER_IS_BETTER, finite_number

FLOOR_QUANTILE = 0.999
FLOOR_DRAWS = 4000
MAX_SIMULATED = 1000
CONFIDENCE = 0.95
MEDIAN_COVERAGE = 0.85  # samples.py: a row's median is known when this interval is narrow


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def min_p_value(n1, n2):
    """The smallest two-sided p a Mann-Whitney U test can give for n1, n2."""
    return 2.0 / math.comb(n1 + n2, n1)


def load_floors(path):
    """{benchmark name: [relative process medians]} from an A/A calibration
    file (scripts/ab.py calibrate)."""
    return floors_from_doc(read_json(path), path)


def floors_from_doc(doc, path):
    benches = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(benches, dict):
        raise BadInput(f"{path}: not a floors file (no 'benchmarks' object; make one with scripts/ab.py calibrate)")
    out = {}
    for name, b in benches.items():
        pool = b.get("process_medians") if isinstance(b, dict) else None
        if not isinstance(pool, list) or not all(finite_number(x) and x > 0 for x in pool):
            raise BadInput(f"{path}: {name}: 'process_medians' must be a list of positive numbers")
        out[name] = [float(x) for x in pool]
    return out


def noise_floor(pool, n_a, n_b, quantile=FLOOR_QUANTILE, draws=FLOOR_DRAWS):
    """The |relative change of medians| that n_a vs n_b samples drawn from
    `pool` (process medians of identical builds) exceed with probability
    1 - quantile: two disjoint random subsets per draw when the pool is big
    enough, else draws with replacement. Deterministic (fixed seed). At
    most MAX_SIMULATED samples a side are drawn: beyond, the floor is that
    of MAX_SIMULATED (larger, so conservative), and the time stays bounded."""
    if len(pool) < 4 or n_a < 1 or n_b < 1:
        return float("nan")
    n_a, n_b = min(n_a, MAX_SIMULATED), min(n_b, MAX_SIMULATED)
    rng = random.Random(20261130)
    changes = []
    for _ in range(draws):
        if len(pool) >= n_a + n_b:
            s = rng.sample(pool, n_a + n_b)
            a, b = s[:n_a], s[n_a:]
        else:
            a = [rng.choice(pool) for _ in range(n_a)]
            b = [rng.choice(pool) for _ in range(n_b)]
        changes.append(abs(median(b) / median(a) - 1.0))
    changes.sort()
    return changes[min(len(changes) - 1, int(math.ceil(quantile * len(changes))) - 1)]


def the_bar(threshold, floor):
    """The change that counts: the threshold, or the measured noise floor
    when that is higher (nan: no floor)."""
    return max(threshold, floor) if floor == floor else threshold


MAX_PAIRED = 1000  # samples a side in the interval: 1e6 pairs at most


def quantiles(xs):
    """xs, or MAX_PAIRED of its evenly spaced order statistics when it has
    more (the interval's pairs grow with the product of the two counts)."""
    if len(xs) <= MAX_PAIRED:
        return xs
    xs = sorted(xs)
    return [xs[round(i * (len(xs) - 1) / (MAX_PAIRED - 1))] for i in range(MAX_PAIRED)]


def speed(a, b, metric, confidence=CONFIDENCE):
    """(speed, low, high) of b against a: baseline time / b's time (for a
    throughput metric, b / baseline), 1 being the same; the interval is the
    Hodges-Lehmann one of the log ratio over all pairs (distribution-free,
    the large-sample rank bound of Hollander and Wolfe; over MAX_PAIRED
    quantiles a side beyond that many samples), nan when there are too few
    samples for it."""
    if not a.samples or not b.samples:
        return (math.nan,) * 3
    sign = -1 if metric in HIGHER_IS_BETTER else 1
    la, lb = (quantiles([math.log(x) for x in side.samples]) for side in (a, b))
    d = sorted(sign * (x - y) for x in la for y in lb)
    n, m = len(la), len(lb)
    point = math.exp(sign * (math.log(median(a.samples)) - math.log(median(b.samples))))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    k = math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))
    if k < 1:
        return point, math.nan, math.nan
    return point, math.exp(d[k - 1]), math.exp(d[len(d) - k])


def robust_sd(xs):
    """The standard deviation of xs estimated from its median absolute
    deviation (1.4826 MAD): one wild sample does not stretch it."""
    m = median(xs)
    return 1.4826 * median([abs(x - m) for x in xs]) if len(xs) > 1 else 0.0


def median_se(xs):
    """The standard error of the median of xs (1.2533 sd / sqrt(n), sd robust)."""
    return 1.2533 * robust_sd(xs) / math.sqrt(len(xs)) if xs else math.nan


def t_quantile(p, df):
    """Student's t quantile (scipy)."""
    from scipy.stats import t
    return float(t.ppf(p, df))


def machine_bounds(levels, extra_se=0.0, spread_floor=0.0, confidence=CONFIDENCE):
    """Where one more machine of a kind can fall, from `levels` (one value
    per recorded machine, e.g. the log of its median time): (centre,
    half-width) of the prediction interval mean +- t(k-1) * sqrt(s^2 (1 +
    1/k) + extra_se^2), s the machines' standard deviation, at least
    spread_floor. With k machines the t quantile has k - 1 degrees of
    freedom: 12.7 for 2 machines, 4.3 for 3, 2.3 for 10, so how few
    machines are recorded widens the interval. Needs k >= 2."""
    k = len(levels)
    centre = sum(levels) / k
    s = max(math.sqrt(sum((x - centre) ** 2 for x in levels) / (k - 1)), spread_floor)
    t = t_quantile(0.5 + confidence / 2, k - 1)
    return centre, t * math.sqrt(s * s * (1 + 1 / k) + extra_se * extra_se)


def median_interval(xs, coverage=MEDIAN_COVERAGE):
    """The distribution-free interval of the median of xs: the order
    statistics [x(k), x(n-1-k)] with the most cut from each end that still
    cover the median coverage of the time (binomial); (nan, nan) for
    too few samples. From 7 samples on, one wild process falls outside it."""
    s, n = sorted(xs), len(xs)
    cover = lambda k: 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    if n < 2 or cover(0) < coverage:
        return math.nan, math.nan
    k = max(j for j in range(n // 2) if cover(j) >= coverage)
    return s[k], s[n - 1 - k]


def median_halfwidth(xs, coverage=MEDIAN_COVERAGE):
    """How well the median of xs is known, relative to it: the half-width of
    its interval at `coverage` (normal quantile times median_se, the spread
    robust: one wild process does not stretch it); nan for fewer than 2."""
    if len(xs) < 2 or not median(xs):
        return math.nan
    return NormalDist().inv_cdf((1 + coverage) / 2) * median_se(xs) / abs(median(xs))


def processes_for(xs, halfwidth, coverage=MEDIAN_COVERAGE):
    """About how many samples like xs would know their median to within
    +-halfwidth, from their robust spread (median_halfwidth, which shrinks as
    one over the root of their number)."""
    h = median_halfwidth(xs, coverage)
    return len(xs) if h != h else max(len(xs), math.ceil(len(xs) * (h / halfwidth) ** 2))
