package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// report collects the rounds of every case and mode and prints them.
type report struct {
	out    io.Writer
	rounds *tabwriter.Writer
	rows   []*row
	// rss holds each case's resident memory after its rounds, in MiB:
	// the controller's and the baseline's.
	rss []caseMemory
}

// caseMemory is the resident memory of a case's servers after its rounds,
// and before them (after the one call that probed the controller's answer):
// what a process holds before any load is not the request path's. Each
// figure is VmRSS, and its anonymous part (RssAnon, without the pages
// mapped from the binary and its libraries), in MiB.
type caseMemory struct {
	Case               string  `json:"case"`
	Controller         float64 `json:"controller_rss_mib"`
	Baseline           float64 `json:"baseline_rss_mib"`
	ControllerIdle     float64 `json:"controller_idle_rss_mib"`
	BaselineIdle       float64 `json:"baseline_idle_rss_mib"`
	ControllerAnon     float64 `json:"controller_anon_mib"`
	BaselineAnon       float64 `json:"baseline_anon_mib"`
	ControllerIdleAnon float64 `json:"controller_idle_anon_mib"`
	BaselineIdleAnon   float64 `json:"baseline_idle_anon_mib"`
	// Build is the controller's build tags ("-tags telemetry"), when it has
	// any (-agent-tags).
	Build string `json:"controller_build,omitempty"`
}

// memory records the resident memory of a case's servers before its rounds
// (idle) and after them (after), each {controller, baseline}; build names
// the controller's build tags, if any.
func (r *report) memory(name, build string, idle, after [2]memReading) {
	r.rss = append(r.rss, caseMemory{Case: name, Build: build,
		Controller: after[0].RSS, Baseline: after[1].RSS, ControllerIdle: idle[0].RSS, BaselineIdle: idle[1].RSS,
		ControllerAnon: after[0].Anon, BaselineAnon: after[1].Anon, ControllerIdleAnon: idle[0].Anon, BaselineIdleAnon: idle[1].Anon})
}

func newReport(out io.Writer) *report {
	r := &report{out: out, rounds: tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)}
	fmt.Fprintln(r.rounds, "case\tmode\tround\tserver\trequests\treq/s\tCPU µs/req\tclient CPU µs/req\tp50\tp99\t")
	return r
}

// row is one case in one token mode.
type row struct {
	rep        *report
	name, mode string
	ctrl, base []result
	// verifying holds, for a fresh-token row, the round of the verifying
	// baseline (bare net/http + one ed25519.Verify per token) run right
	// after each baseline round; a round with no requests was not run.
	verifying []result
	// floors are, for a fresh-token row, the CPU of one ed25519.Verify of
	// a token-sized message measured in this process right before each
	// round, in µs (0: not measured).
	floors []float64
}

func (r *report) row(name, mode string) *row {
	rw := &row{rep: r, name: name, mode: mode}
	r.rows = append(r.rows, rw)
	return rw
}

// bestRate returns the highest controller rate of a round of name in mode.
func (r *report) bestRate(name, mode string) float64 {
	best := 0.0
	for _, rw := range r.rows {
		if rw.name == name && rw.mode == mode {
			for _, c := range rw.ctrl {
				best = max(best, c.rate())
			}
		}
	}
	return best
}

// add records and prints one round: the controller's, the baseline's and,
// when it ran (requests > 0), the verifying baseline's.
func (rw *row) add(round int, ctrl, base, verifying result) {
	rw.ctrl = append(rw.ctrl, ctrl)
	rw.base = append(rw.base, base)
	rw.verifying = append(rw.verifying, verifying)
	type serverRound struct {
		server string
		r      result
	}
	servers := []serverRound{{"controller", ctrl}, {"baseline", base}}
	if verifying.requests > 0 {
		servers = append(servers, serverRound{"baseline+Verify", verifying})
	}
	for _, x := range servers {
		cpu, client := "n/a", "n/a"
		if v, ok := x.r.cpuPerRequest(); ok {
			cpu = fmt.Sprintf("%.1f", v)
		}
		if v, ok := x.r.clientCPUPerRequest(); ok {
			client = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(rw.rep.rounds, "%s\t%s\t%d\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t\n", rw.name, rw.mode, round, x.server, x.r.requests,
			x.r.rate(), cpu, client, ms(percentile(x.r.latencies, 0.50)), ms(percentile(x.r.latencies, 0.99)))
	}
}

// spread is the median and the range of a figure over the rounds.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf returns nil for no figures.
func spreadOf(xs []float64) *spread {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	round := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	return &spread{Median: round(m), Min: round(s[0]), Max: round(s[len(s)-1])}
}

// format writes "median [min–max]" with the precision of f.
func (s *spread) format(f string) string {
	if s == nil {
		return "n/a"
	}
	return fmt.Sprintf(f+" ["+f+"–"+f+"]", s.Median, s.Min, s.Max)
}

// summaryRow is one line of the summary, also written as JSON.
type summaryRow struct {
	Case     string  `json:"case"`
	Mode     string  `json:"mode"`
	Rounds   int     `json:"rounds"`
	Ratio    *spread `json:"ratio,omitempty"`
	Target   float64 `json:"target"`
	Met      bool    `json:"met"`
	CtrlRate *spread `json:"controller_rps,omitempty"`
	BaseRate *spread `json:"baseline_rps,omitempty"`
	CtrlCPU  *spread `json:"controller_cpu_us_per_req,omitempty"`
	BaseCPU  *spread `json:"baseline_cpu_us_per_req,omitempty"`
	// CtrlClient and BaseClient are the client's CPU per request while it
	// drove the controller and the baseline.
	CtrlClient *spread `json:"client_cpu_us_per_req_controller,omitempty"`
	BaseClient *spread `json:"client_cpu_us_per_req_baseline,omitempty"`
	// ClientHeavy is set when the client cost more CPU per request than
	// the baseline server (medians over the rounds): the run fails.
	ClientHeavy   bool    `json:"client_heavier_than_baseline,omitempty"`
	CtrlP50       *spread `json:"controller_p50_ms,omitempty"`
	BaseP50       *spread `json:"baseline_p50_ms,omitempty"`
	CtrlP99       *spread `json:"controller_p99_ms,omitempty"`
	BaseP99       *spread `json:"baseline_p99_ms,omitempty"`
	P99Ratio      *spread `json:"p99_ratio,omitempty"`
	P99Target     float64 `json:"p99_target"`
	P99Met        bool    `json:"p99_met"`
	RanOutOfToken bool    `json:"cut_short,omitempty"`
	// CPUOver is each round's controller CPU per request above the
	// baseline's of the same round (the two rounds run one after the
	// other), in µs.
	CPUOver *spread `json:"cpu_us_above_baseline,omitempty"`
	// VerifyFloor is, for fresh tokens, ed25519.Verify alone measured
	// before each round, and FreshOver each round's controller CPU above
	// the reused request's (median) and that round's floor, in µs.
	VerifyFloor *spread `json:"verify_floor_us,omitempty"`
	FreshOver   *spread `json:"fresh_cpu_us_above_reused_and_verify,omitempty"`
	// For fresh tokens, the verifying baseline: its rate and CPU per
	// request, its rate over the baseline's (VerifyingRatio: what a server
	// doing nothing but the signature check reaches, the ceiling of the
	// fresh-token ratio), the controller's rate over its rate (same round),
	// VerifyLoaded its CPU above the baseline's of the same round (one
	// ed25519.Verify under the same load), and FreshOverLoaded each round's
	// controller CPU above the reused request's (median) and that round's
	// VerifyLoaded, in µs.
	VerifyingRate   *spread `json:"verifying_baseline_rps,omitempty"`
	VerifyingCPU    *spread `json:"verifying_baseline_cpu_us_per_req,omitempty"`
	VerifyingRatio  *spread `json:"verifying_baseline_ratio,omitempty"`
	RatioVerifying  *spread `json:"ratio_to_verifying_baseline,omitempty"`
	VerifyLoaded    *spread `json:"verify_under_load_us,omitempty"`
	FreshOverLoaded *spread `json:"fresh_cpu_us_above_reused_and_verify_under_load,omitempty"`
}

func (rw *row) summary() summaryRow {
	s := summaryRow{Case: rw.name, Mode: rw.mode, Rounds: len(rw.ctrl), Target: targetReused, P99Target: targetP99}
	if rw.mode == modeFresh {
		s.Target = targetFresh
	}
	var ratio, cr, br, cc, bc, over, ccl, bcl, c50, b50, c99, b99, p99r []float64
	for i := range rw.ctrl {
		c, b := rw.ctrl[i], rw.base[i]
		if b.rate() > 0 {
			ratio = append(ratio, c.rate()/b.rate())
		}
		cr, br = append(cr, c.rate()), append(br, b.rate())
		cv, cok := c.cpuPerRequest()
		bv, bok := b.cpuPerRequest()
		if cok {
			cc = append(cc, cv)
		}
		if bok {
			bc = append(bc, bv)
		}
		if cok && bok {
			over = append(over, cv-bv)
		}
		if v, ok := c.clientCPUPerRequest(); ok {
			ccl = append(ccl, v)
		}
		if v, ok := b.clientCPUPerRequest(); ok {
			bcl = append(bcl, v)
		}
		cp50, cp99 := percentile(c.latencies, 0.50), percentile(c.latencies, 0.99)
		bp50, bp99 := percentile(b.latencies, 0.50), percentile(b.latencies, 0.99)
		c50, b50 = append(c50, msf(cp50)), append(b50, msf(bp50))
		c99, b99 = append(c99, msf(cp99)), append(b99, msf(bp99))
		if bp99 > 0 {
			p99r = append(p99r, float64(cp99)/float64(bp99))
		}
		s.RanOutOfToken = s.RanOutOfToken || c.cutShort
	}
	s.Ratio, s.CtrlRate, s.BaseRate = spreadOf(ratio), spreadOf(cr), spreadOf(br)
	s.CtrlCPU, s.BaseCPU, s.CPUOver = spreadOf(cc), spreadOf(bc), spreadOf(over)
	s.CtrlClient, s.BaseClient = spreadOf(ccl), spreadOf(bcl)
	s.ClientHeavy = s.BaseClient != nil && s.BaseCPU != nil && s.BaseClient.Median > s.BaseCPU.Median
	s.CtrlP50, s.BaseP50, s.CtrlP99, s.BaseP99 = spreadOf(c50), spreadOf(b50), spreadOf(c99), spreadOf(b99)
	s.P99Ratio = spreadOf(p99r)
	s.Met = s.Ratio != nil && s.Ratio.Median >= s.Target
	s.P99Met = s.P99Ratio != nil && s.P99Ratio.Median <= s.P99Target
	var floors []float64
	for _, f := range rw.floors {
		if f > 0 {
			floors = append(floors, f)
		}
	}
	s.VerifyFloor = spreadOf(floors)
	var vr, vc, vbase, vratio, loaded []float64
	for i, v := range rw.verifying {
		if v.requests == 0 {
			continue
		}
		vr = append(vr, v.rate())
		if b := rw.base[i].rate(); b > 0 {
			vbase = append(vbase, v.rate()/b)
		}
		if v.rate() > 0 {
			vratio = append(vratio, rw.ctrl[i].rate()/v.rate())
		}
		if c, ok := v.cpuPerRequest(); ok {
			vc = append(vc, c)
		}
		if l, ok := rw.verifyLoaded(i); ok {
			loaded = append(loaded, l)
		}
	}
	s.VerifyingRate, s.VerifyingCPU, s.RatioVerifying, s.VerifyLoaded = spreadOf(vr), spreadOf(vc), spreadOf(vratio), spreadOf(loaded)
	s.VerifyingRatio = spreadOf(vbase)
	return s
}

// verifyLoaded returns round i's verifying-baseline CPU per request above
// the baseline's: one signature check under the load of that round.
func (rw *row) verifyLoaded(i int) (float64, bool) {
	if i >= len(rw.verifying) || rw.verifying[i].requests == 0 {
		return 0, false
	}
	v, vok := rw.verifying[i].cpuPerRequest()
	b, bok := rw.base[i].cpuPerRequest()
	return v - b, vok && bok
}

// freshOver returns, per round of the fresh-token row, the controller CPU
// above reusedCPU (the reused-token request's median) and the round's own
// ed25519.Verify floor; rounds without a floor are left out.
func (rw *row) freshOver(reusedCPU float64) []float64 {
	return rw.aboveReused(reusedCPU, func(i int) (float64, bool) {
		if i >= len(rw.floors) || rw.floors[i] <= 0 {
			return 0, false
		}
		return rw.floors[i], true
	})
}

// freshOverLoaded is freshOver against the round's own signature check
// under load (verifyLoaded); rounds without a verifying-baseline round are
// left out.
func (rw *row) freshOverLoaded(reusedCPU float64) []float64 {
	return rw.aboveReused(reusedCPU, rw.verifyLoaded)
}

// aboveReused returns, per round whose floor is known, the controller CPU
// above reusedCPU and that round's floor.
func (rw *row) aboveReused(reusedCPU float64, floor func(round int) (float64, bool)) []float64 {
	var over []float64
	for i, c := range rw.ctrl {
		v, ok := c.cpuPerRequest()
		f, fok := floor(i)
		if ok && fok {
			over = append(over, v-reusedCPU-f)
		}
	}
	return over
}

// summary prints the rounds, the summary table, the run's duration since
// began and the load average, then the JSON line, last. heavy describes
// each row whose client cost more CPU per request than the baseline server.
func (r *report) summary(began time.Time) (heavy []string, err error) {
	if err := r.rounds.Flush(); err != nil {
		return nil, err
	}
	fmt.Fprintln(r.out)
	fmt.Fprintln(r.out, "median [min–max] over the rounds; ratio = controller/baseline req/s of the same round")
	tw := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tmode\tratio\ttarget\tcontroller req/s\tbaseline req/s\tcontroller CPU µs/req\tbaseline CPU µs/req\tclient CPU µs/req (controller / baseline rounds)\tcontroller p50 ms\tbaseline p50 ms\tcontroller p99 ms\tbaseline p99 ms\tp99 ratio (target <= 1.5)\t")
	var rows []summaryRow
	for _, rw := range r.rows {
		if len(rw.ctrl) == 0 {
			continue
		}
		s := rw.summary()
		rows = append(rows, s)
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "NOT met"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t>= %.2f %s\t%s\t%s\t%s\t%s\t%s / %s\t%s\t%s\t%s\t%s\t%s %s\t\n", s.Case, s.Mode,
			s.Ratio.format("%.2f"), s.Target, verdict(s.Met), s.CtrlRate.format("%.0f"), s.BaseRate.format("%.0f"),
			s.CtrlCPU.format("%.1f"), s.BaseCPU.format("%.1f"), s.CtrlClient.format("%.1f"), s.BaseClient.format("%.1f"), s.CtrlP50.format("%.2f"), s.BaseP50.format("%.2f"),
			s.CtrlP99.format("%.2f"), s.BaseP99.format("%.2f"), s.P99Ratio.format("%.2f"), verdict(s.P99Met))
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	r.freshOver(rows)
	r.cpuTargets(rows)
	for _, m := range r.rss {
		if m.Controller == 0 {
			continue
		}
		verdict := "met"
		if m.Controller > targetRSSMiB {
			verdict = "NOT met"
		}
		build := ""
		if m.Build != "" {
			build = " (controller built with " + m.Build + ")"
		}
		fmt.Fprintf(r.out, "%-9s resident memory after the run%s: controller %.1f MiB (target <= %.0f: %s; anonymous %.1f), baseline %.1f MiB (anonymous %.1f); before the load: controller %.1f MiB (anonymous %.1f), baseline %.1f MiB (anonymous %.1f)\n",
			m.Case, build, m.Controller, targetRSSMiB, verdict, m.ControllerAnon, m.Baseline, m.BaselineAnon,
			m.ControllerIdle, m.ControllerIdleAnon, m.BaselineIdle, m.BaselineIdleAnon)
	}
	for _, s := range rows {
		if s.ClientHeavy {
			msg := fmt.Sprintf("%s %s: client %.1f µs/req > baseline server %.1f µs/req", s.Case, s.Mode, s.BaseClient.Median, s.BaseCPU.Median)
			fmt.Fprintf(r.out, "CLIENT TOO HEAVY: %s; the ratios flatter the controller\n", msg)
			heavy = append(heavy, msg)
		}
		if s.RanOutOfToken {
			fmt.Fprintf(r.out, "%s %s: some rounds ran out of pre-minted tokens and ended early; rates use the time actually run\n", s.Case, s.Mode)
		}
	}
	load := loadAverage()
	fmt.Fprintf(r.out, "finished in %v; %s\n", time.Since(began).Round(time.Second), load)
	b, err := json.Marshal(map[string]any{"load_average": load, "rows": rows, "memory": r.rss})
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(r.out, "\nloadcheck-json: %s\n", b)
	return heavy, err
}

// cpuTargets prints, per case, the server CPU of a reused-token request
// above the baseline's, and that of a fresh-token request above the reused
// one's and ed25519.Verify's (medians over the rounds), with their targets.
func (r *report) cpuTargets(rows []summaryRow) {
	cpu := map[[2]string]summaryRow{}
	var cases []string
	for _, s := range rows {
		if s.CtrlCPU == nil || s.CPUOver == nil {
			continue
		}
		if _, seen := cpu[[2]string{s.Case, modeReused}]; !seen && s.Mode == modeReused {
			cases = append(cases, s.Case)
		}
		cpu[[2]string{s.Case, s.Mode}] = s
	}
	if len(cases) == 0 {
		return
	}
	verdict := func(v, target float64) string {
		if v <= target {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintln(r.out, "\nserver CPU targets (medians [min–max] over the rounds; ed25519.Verify alone measured in this process right before each fresh round)")
	for _, c := range cases {
		re := cpu[[2]string{c, modeReused}]
		fmt.Fprintf(r.out, "%-9s reused: %s µs above the baseline of the same round (target <= %.0f: %s)\n",
			c, re.CPUOver.format("%.1f"), targetCPUOver, verdict(re.CPUOver.Median, targetCPUOver))
		fr, ok := cpu[[2]string{c, modeFresh}]
		if ok && fr.FreshOver != nil {
			fmt.Fprintf(r.out, "%-9s fresh:  %s µs above the reused request + ed25519.Verify of the same round (%s µs) (target <= %.0f: %s)\n",
				c, fr.FreshOver.format("%.1f"), fr.VerifyFloor.format("%.1f"), targetFreshOver, verdict(fr.FreshOver.Median, targetFreshOver))
		}
		if ok && fr.FreshOverLoaded != nil {
			fmt.Fprintf(r.out, "%-9s fresh:  %s µs above the reused request + ed25519.Verify under the same load (%s µs: bare net/http verifying each token's signature, above the baseline of the same round); that server reaches %s of the baseline's req/s (the ceiling of the fresh ratio), the controller %s of its req/s\n",
				c, fr.FreshOverLoaded.format("%.1f"), fr.VerifyLoaded.format("%.1f"), fr.VerifyingRatio.format("%.2f"), fr.RatioVerifying.format("%.2f"))
		}
	}
}

// freshOver sets FreshOver of each fresh-token row of rows from its
// rounds, against the median CPU of the same case's reused-token rounds.
func (r *report) freshOver(rows []summaryRow) {
	reused := map[string]float64{}
	for _, s := range rows {
		if s.Mode == modeReused && s.CtrlCPU != nil {
			reused[s.Case] = s.CtrlCPU.Median
		}
	}
	for i := range rows {
		s := &rows[i]
		cpu, ok := reused[s.Case]
		if s.Mode != modeFresh || !ok {
			continue
		}
		for _, rw := range r.rows {
			if rw.name == s.Case && rw.mode == modeFresh {
				s.FreshOver = spreadOf(rw.freshOver(cpu))
				s.FreshOverLoaded = spreadOf(rw.freshOverLoaded(cpu))
			}
		}
	}
}

// ms formats a latency in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", msf(d)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
