// Command attacker plays the unauthenticated clients of issue 20's attacks
// against poolkeeper-webhook's HTTPS port, for the attack phases of
// e2e/tests/fault.bats. It only ever dials a loopback target from loopback
// source addresses.
//
//	attacker -mode slowpost|headers|forged -target 127.0.0.1:PORT [flags]
//
// Modes:
//   - slowpost: each connection sends a POST's headers with Content-Length: 100,
//     then one byte of the body, and waits; cut, it connects again.
//   - headers: each connection sends 60 KB of a header that never ends, and
//     waits; cut, it connects again.
//   - forged: each connection sends forged AdmissionReviews of a claim CREATE
//     to /mutate, kept alive, one after the other as fast as answers come;
//     each review has its own userInfo (so no SubjectAccessReview answer can
//     be reused) and an owner reference without blockOwnerDeletion, which
//     repair mode asks the apiserver about.
//
// At the end it prints one line of key=value figures.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type stats struct {
	dials, dialErrors, cuts, requests, answered, failed atomic.Int64
	mu                                                  sync.Mutex
	codes                                               map[int]int64
	latencies                                           []time.Duration
}

func (s *stats) observe(code int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code]++
	if len(s.latencies) < 1_000_000 {
		s.latencies = append(s.latencies, d)
	}
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

func main() {
	mode := flag.String("mode", "", "slowpost, headers or forged")
	target := flag.String("target", "", "the webhook's address, 127.0.0.1:PORT (loopback only)")
	conns := flag.Int("conns", 1000, "connections held at once")
	sources := flag.Int("sources", 10, "distinct source addresses 127.0.2.1.. the connections are spread over")
	duration := flag.Duration("duration", 30*time.Second, "how long the attack runs")
	headerBytes := flag.Int("header-bytes", 60_000, "headers mode: bytes of the header that never ends")
	flag.Parse()

	host, _, err := net.SplitHostPort(*target)
	if err != nil {
		fail("-target %q: %v", *target, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		fail("-target %q: not a loopback address", *target)
	}
	if *conns < 1 || *conns > 100_000 {
		fail("-conns %d: must be 1..100000", *conns)
	}
	if *sources < 1 || *sources > 250 {
		fail("-sources %d: must be 1..250", *sources)
	}
	var run func(ctx context.Context, d *net.Dialer, s *stats, id int)
	switch *mode {
	case "slowpost":
		run = func(ctx context.Context, d *net.Dialer, s *stats, id int) {
			hold(ctx, d, *target, s, fmt.Sprintf("POST /mutate HTTP/1.1\r\nHost: %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{", *target))
		}
	case "headers":
		run = func(ctx context.Context, d *net.Dialer, s *stats, id int) {
			hold(ctx, d, *target, s, fmt.Sprintf("POST /mutate HTTP/1.1\r\nHost: %s\r\nX-Pad: %s",
				*target, strings.Repeat("a", *headerBytes)))
		}
	case "forged":
		run = func(ctx context.Context, d *net.Dialer, s *stats, id int) { forge(ctx, d, *target, s, id) }
	default:
		fail("-mode %q: must be slowpost, headers or forged", *mode)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()

	s := &stats{codes: map[int]int64{}}
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < *conns; i++ {
		src := net.IPv4(127, 0, 2, byte(1+i%*sources))
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			run(ctx, d, s, id)
		}(i)
	}
	wg.Wait()
	report(*mode, *conns, *sources, time.Since(start), s)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "attacker: "+format+"\n", args...)
	os.Exit(2)
}

func tlsConfig() *tls.Config {
	// An attacker does not care whom it talks to.
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} //nolint:gosec
}

// hold keeps one connection busy with prefix sent and nothing more, connecting
// again whenever the server cuts it, until ctx ends.
func hold(ctx context.Context, d *net.Dialer, target string, s *stats, prefix string) {
	buf := make([]byte, 512)
	for ctx.Err() == nil {
		s.dials.Add(1)
		td := &tls.Dialer{NetDialer: d, Config: tlsConfig()}
		c, err := td.DialContext(ctx, "tcp", target)
		if err != nil {
			if ctx.Err() == nil {
				s.dialErrors.Add(1)
				pause(ctx, 50*time.Millisecond)
			}
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		if _, err := io.WriteString(c, prefix); err == nil {
			// Until the server cuts (or answers and closes).
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
		}
		stop()
		c.Close()
		if ctx.Err() == nil {
			s.cuts.Add(1)
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// forge sends forged reviews over one kept-alive connection (its own
// transport), as fast as they are answered.
func forge(ctx context.Context, d *net.Dialer, target string, s *stats, id int) {
	tr := &http.Transport{
		DialContext:         d.DialContext,
		TLSClientConfig:     tlsConfig(),
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		ForceAttemptHTTP2:   false,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	url := "https://" + target + "/mutate"
	for n := 0; ctx.Err() == nil; n++ {
		body := review(id, n)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			fail("request: %v", err)
		}
		req.Header.Set("Content-Type", "application/json")
		s.requests.Add(1)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				s.failed.Add(1)
				pause(ctx, 50*time.Millisecond)
			}
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.answered.Add(1)
		s.observe(resp.StatusCode, time.Since(t0))
	}
}

// review is a forged AdmissionReview of a claim CREATE on a poolkeeper pool:
// its owner reference lacks both flags, so repair mode would set them and
// first asks whether this user may set blockOwnerDeletion.
func review(id, n int) []byte {
	uid := fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", id%1_000_000, n%1_000_000)
	ns := fmt.Sprintf("forged-%d", id%50)
	name := fmt.Sprintf("m-%d-%d", id, n)
	return fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{`+
		`"uid":%q,"kind":{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","kind":"IPAddressClaim"},`+
		`"resource":{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","resource":"ipaddressclaims"},`+
		`"requestKind":{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","kind":"IPAddressClaim"},`+
		`"requestResource":{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","resource":"ipaddressclaims"},`+
		`"name":%q,"namespace":%q,"operation":"CREATE",`+
		`"userInfo":{"username":"system:serviceaccount:%s:forged-%d-%d","uid":%q,"groups":["system:serviceaccounts","system:authenticated"]},`+
		`"object":{"apiVersion":"ipam.cluster.x-k8s.io/v1beta2","kind":"IPAddressClaim",`+
		`"metadata":{"name":%q,"namespace":%q,"labels":{"cluster.x-k8s.io/cluster-name":"prod"},`+
		`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"machine","uid":%q}]},`+
		`"spec":{"clusterName":"prod","poolRef":{"apiGroup":"ipam.poolkeeper.io","kind":"IPPool","name":"burst"}}},`+
		`"oldObject":null,"dryRun":false,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}`,
		uid, name, ns, ns, id, n, uid, name, ns, uid)
}

func report(mode string, conns, sources int, took time.Duration, s *stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sort.Slice(s.latencies, func(i, j int) bool { return s.latencies[i] < s.latencies[j] })
	codes := make([]int, 0, len(s.codes))
	for c := range s.codes {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var cs []string
	for _, c := range codes {
		cs = append(cs, fmt.Sprintf("%d:%d", c, s.codes[c]))
	}
	fmt.Printf("mode=%s conns=%d sources=%d seconds=%.1f dials=%d dial_errors=%d cuts=%d "+
		"requests=%d answered=%d failed=%d codes=%s p50_ms=%d p99_ms=%d\n",
		mode, conns, sources, took.Seconds(), s.dials.Load(), s.dialErrors.Load(), s.cuts.Load(),
		s.requests.Load(), s.answered.Load(), s.failed.Load(), strings.Join(cs, ","),
		quantile(s.latencies, 0.5).Milliseconds(), quantile(s.latencies, 0.99).Milliseconds())
}
