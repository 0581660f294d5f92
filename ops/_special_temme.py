"""Coefficients of Temme's uniform asymptotic expansion of the incomplete gamma functions.

For a > 0 and lambda = x / a, with eta = sign(lambda - 1) sqrt(2 (lambda - 1 - log lambda)),

    Q(a, x) = erfc(eta sqrt(a / 2)) / 2 + exp(-a eta^2 / 2) / sqrt(2 pi a) * sum_k c_k(eta) a^-k

and P = 1 - Q (N. M. Temme, "The asymptotic expansion of the incomplete gamma
functions", SIAM J. Math. Anal. 10 (1979); DiDonato and Morris, ACM TOMS 12 (1986)).
``TEMME[k][n]`` is the Taylor coefficient of eta^n in c_k(eta), computed by
``python -m hlodsl.ops._special_temme`` from Temme's recurrence

    c_0 = 1 / mu - 1 / eta,   c_k = c_{k-1}'(eta) / eta + (-1)^k g_k / mu   (mu = lambda - 1),

with mpmath power series at 80 digits (g_k, the coefficients of Gamma*(a), fall out
of the recurrence as the constants that keep c_k regular at eta = 0: 1, 1/12, 1/288,
-139/51840, ...). The table is cut for the region where ops/incomplete_gamma.py uses it,
a >= 20 and |eta| <= 0.34: every dropped term is below 1e-2 f64 ulp of c_0 there.

>>> TEMME[0][:2]   # c_0(eta) = -1/3 + eta/12 + ...
(-0.3333333333333333, 0.08333333333333333)
"""

from __future__ import annotations

__all__ = ["TEMME", "temme_coefficients"]

#: Rows k = 0, 1, ...: the eta-series of c_k, cut where |d| 0.34^n 20^-k < 7e-19.
TEMME = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073, 0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05, -2.185448510679992e-06, -1.85406221071516e-06, 8.296711340953087e-07, -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08, -4.382036018453353e-09, 9.14769958223679e-10, -2.5514193994946248e-11, -5.830772132550426e-11),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454, -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07, -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06, 4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08, 1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09, 4.162792991842583e-10),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049, 2.0093878600823047e-06, -0.0001073665322636516, 5.2923448829120125e-05, -1.2760635188618728e-05, 3.423578734096138e-08, 1.3721957309062934e-06, -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10, -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617114e-09),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557, 0.00026772063206283885, -7.561801671883977e-05, -2.396505113867297e-07, 1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06, -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08, -1.9111168485973655e-08),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902, -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05, 1.1375726970678419e-05, 2.507497226237533e-10, -1.6954149536558305e-06, 8.907507532205309e-07, -2.292934834000805e-07),
    (-0.00033679855336635813, -6.972813758365857e-05, 0.0002772753244959392, -0.00019932570516188847, 6.797780477937208e-05, 1.419062920643967e-07, -1.3594048189768693e-05, 8.018470256334202e-06, -2.291481176508095e-06, -3.252473551298454e-10, 3.4652846491085265e-07),
    (0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045, 7.902353232660328e-07, -8.153969367561969e-05, 5.61168275310625e-05, -1.8329116582843375e-05, -3.0796134506033047e-09, 3.465155368803609e-06, -2.0291327396058603e-06),
    (0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234, 0.0002812695154763237, -0.00010976582244684731, -1.2741009095484485e-07, 2.7744451511563645e-05, -1.8263488805711332e-05, 5.7876949497350525e-06),
    (-0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721, -6.969091458420552e-07, 0.00016644846642067547, -0.00012783517679769218, 4.629953263691304e-05),
    (-0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328, -0.0006401475260262758, 0.00027750107634328704),
    (0.0013324454494800656, -0.0019144384985654776, 0.0011089369134596636),
    (0.001579727660730835, 0.00016251626278391583, -0.0020633421035543276),
    (-0.004072512119514016,),
)


def temme_coefficients(rows: int = 25, order: int = 25, digits: int = 80) -> list[list[float]]:
    """The Taylor coefficients of c_k(eta), k < rows, n < order, by Temme's recurrence."""
    import mpmath as mp

    mp.mp.dps = digits
    size = order + 2 * rows + 2  # each step of the recurrence uses two orders up
    zero = mp.mpf(0)

    def mul(p, q):
        out = [zero] * size
        for i, pi in enumerate(p):
            for j in range(size - i):
                out[i + j] += pi * q[j]
        return out

    def inv(p):
        out = [1 / p[0]] + [zero] * (size - 1)
        for n in range(1, size):
            out[n] = -mp.fsum(p[k] * out[n - k] for k in range(1, n + 1)) / p[0]
        return out

    # eta = mu h(mu), h = sqrt(1 + g), g = sum_{n >= 1} 2 (-1)^n mu^n / (n + 2).
    g = [zero] + [mp.mpf(2) * (-1) ** n / (n + 2) for n in range(1, size)]
    h = [mp.mpf(1)] + [zero] * (size - 1)
    for n in range(1, size):
        h[n] = (g[n] - mp.fsum(h[k] * h[n - k] for k in range(1, n))) / 2
    # Lagrange inversion: mu = sum_n eta^n / n [t^(n-1)] h(t)^-n.
    h_inv, power, mu = inv(h), [mp.mpf(1)] + [zero] * (size - 1), [zero] * size
    for n in range(1, size):
        power = mul(power, h_inv)
        mu[n] = power[n - 1] / n
    eta_over_mu = inv(mu[1:] + [zero])
    series = [eta_over_mu[1:] + [zero]]  # c_0 = (eta / mu - 1) / eta
    for k in range(1, rows):
        d = [series[-1][i + 1] * (i + 1) for i in range(size - 1)] + [zero]
        g_k = -d[0] * (-1) ** k  # makes (d + (-1)^k g_k eta / mu) / eta regular at 0
        series.append([d[i + 1] + (-1) ** k * g_k * eta_over_mu[i + 1] for i in range(size - 1)]
                      + [zero])
    return [[float(v) for v in row[:order]] for row in series]


if __name__ == "__main__":
    for row in temme_coefficients():
        print(row)
