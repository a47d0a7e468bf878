package postgis

import (
	"context"
	"fmt"
	"time"
)

// ReservePace books n send slots for host, interval apart, after every slot any process
// booked and after any pause, in one statement, and returns how long from now the first
// may go (negative: at once). Up to burst slots may be taken at once after the host was
// idle. With interval 0 it books nothing and returns the pause left, if any. It
// implements retry.Shared: every process on one database paces a host together.
func (s *Store) ReservePace(ctx context.Context, host string, n int, interval time.Duration, burst int) (time.Duration, error) {
	if interval <= 0 || n <= 0 {
		var wait float64
		err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT greatest(extract(epoch FROM paused_until - clock_timestamp()), 0)
			FROM geoflow_host_pace WHERE host = $1 AND paused_until > '-infinity'), 0)::float8`, host).Scan(&wait)
		if err != nil {
			return 0, translate(fmt.Sprintf("reading the shared pause of %s", host), err)
		}
		return time.Duration(wait * float64(time.Second)), nil
	}
	iv := interval.Seconds()
	var wait float64
	// The slots start at the latest of: the schedule's next free slot, now less the
	// burst a rested host may take at once, and the pause.
	err := s.pool.QueryRow(ctx, `
		INSERT INTO geoflow_host_pace AS p (host, tat, interval_s)
		VALUES ($1, clock_timestamp() + make_interval(secs => $2::float8 * $3::float8), $3::float8)
		ON CONFLICT (host) DO UPDATE SET
			tat = greatest(p.tat, clock_timestamp() - make_interval(secs => ($4::float8 - 1) * $3::float8), p.paused_until)
				+ make_interval(secs => $2::float8 * $3::float8),
			interval_s = $3::float8,
			updated_at = clock_timestamp()
		RETURNING extract(epoch FROM p.tat - make_interval(secs => $2::float8 * $3::float8) - clock_timestamp())::float8`,
		host, float64(n), iv, float64(max(burst, 1))).Scan(&wait)
	if err != nil {
		return 0, translate(fmt.Sprintf("booking %d send slots of %s", n, host), err)
	}
	return time.Duration(wait * float64(time.Second)), nil
}

// PausePace holds every process's requests to host for d from now; a longer pause
// already called stands. It implements retry.Shared.
func (s *Store) PausePace(ctx context.Context, host string, d time.Duration) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO geoflow_host_pace AS p (host, tat, paused_until)
		VALUES ($1, clock_timestamp(), clock_timestamp() + make_interval(secs => $2::float8))
		ON CONFLICT (host) DO UPDATE SET
			paused_until = greatest(p.paused_until, clock_timestamp() + make_interval(secs => $2::float8)),
			updated_at = clock_timestamp()`, host, d.Seconds())
	if err != nil {
		return translate(fmt.Sprintf("pausing %s for every process", host), err)
	}
	return nil
}
