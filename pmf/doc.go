// Package pmf completes a performance matrix (models x benchmark metrics)
// with uncertainty, as "Can We Predict Performance of Large Models across
// Vision-Language Tasks?" does: probabilistic matrix factorisation (PMF),
// its tensor form for several metrics per benchmark (PTF), optional model
// profiles (constrained PMF), and the paper's two baselines, Global Mean
// and Mean of Means.
//
// Inference is Gibbs sampling of the conjugate model rather than the
// paper's NUTS. With N(0, I) priors on the latent vectors and Gaussian
// noise every full conditional is Gaussian (the noise variance's is
// inverse-gamma), so Gibbs targets exactly the posterior NUTS samples,
// needs no step-size tuning, and runs in pure Go in under a second on
// GATE-sized matrices. The paper's schedule is kept: 500 warm-up sweeps
// and 100 kept draws; predictions are the posterior mean of U_m.V_n and
// their uncertainty the predictive standard deviation (posterior and
// noise), calibrated on held-out cells so that intervals cover what they
// claim (see Completion.Interval).
//
// Values are z-scored per column on the observed entries before fitting
// (see Normalise for columns with too few observations) and predictions
// are mapped back to the column's own units.
//
// The package also holds the paper's evaluation protocol (Evaluate: mask
// P% of the entries, score RMSE, MAE and R² over seeds) and a simulation
// of active evaluation (Simulate: reveal the cells an acquisition rule
// picks, refit, measure the completed matrix's error after each batch).
package pmf
