package stripebed

import "math"

// Jain returns Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one
// takes everything; 0 for no values or all zero.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// CoV returns the coefficient of variation of xs, population standard deviation over mean; 0
// for no values or a zero mean.
func CoV(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	if mean == 0 {
		return 0
	}
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v/float64(len(xs))) / mean
}

// Utilization returns each link's bytes over what it could carry at its rate (bits/s) in
// seconds: the per-link load the CoV and Jain's index are taken over, so that a sender that
// fills every link of uneven rates scores as even.
func Utilization(bytes []int64, rates []float64, seconds float64) []float64 {
	u := make([]float64, 0, len(bytes))
	for i, b := range bytes {
		if i >= len(rates) || rates[i] <= 0 || seconds <= 0 {
			u = append(u, 0)
			continue
		}
		u = append(u, float64(b)*8/(rates[i]*seconds))
	}
	return u
}
