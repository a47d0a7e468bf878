package retry

import (
	"cmp"

	"github.com/geoflow/geoflow/dlq"
)

// Budget configures the per-host retry budget, the AWS SDK's retry quota.
// Zero fields take their defaults: Tokens 500, RetryCost 5,
// TimeoutRetryCost 10, NoRetryIncrement 1 (added back by each unit that
// succeeds at its first attempt; a unit that succeeds after retries gets
// back what it paid). Disabled turns the budget off.
type Budget struct {
	Tokens           int
	RetryCost        int
	TimeoutRetryCost int
	NoRetryIncrement int
	Disabled         bool
}

func (b Budget) withDefaults() Budget {
	b.Tokens = cmp.Or(b.Tokens, 500)
	b.RetryCost = cmp.Or(b.RetryCost, 5)
	b.TimeoutRetryCost = cmp.Or(b.TimeoutRetryCost, 10)
	b.NoRetryIncrement = cmp.Or(b.NoRetryIncrement, 1)
	return b
}

// retryBudget is the AWS SDK's retry quota: a retry costs tokens, success
// refunds them, and an empty bucket means no more retries for the host, so a
// failing server cannot cause a retry storm however many units wait on it.
// Make one with newRetryBudget. Callers hold the host's lock.
type retryBudget struct {
	cfg    Budget
	tokens int
}

// newRetryBudget returns a full budget; cfg has its defaults applied.
func newRetryBudget(cfg Budget) retryBudget {
	return retryBudget{cfg: cfg, tokens: cfg.Tokens}
}

// spend pays for a retry after a failure of the given class: timeouts cost
// more, as they hold a connection the longest. It reports what was paid (0 when
// the budget is disabled) and whether the retry may go.
func (b *retryBudget) spend(class dlq.Class) (paid int, ok bool) {
	cost := b.cfg.RetryCost
	if class == dlq.ClassTimeout {
		cost = b.cfg.TimeoutRetryCost
	}
	if !b.take(cost) {
		return 0, false
	}
	if b.cfg.Disabled {
		return 0, true
	}
	return cost, true
}

func (b *retryBudget) take(cost int) bool {
	if b.cfg.Disabled {
		return true
	}
	if b.tokens < cost {
		return false
	}
	b.tokens -= cost
	return true
}

// success refunds what the unit paid for its retries, or NoRetryIncrement
// when it needed none, up to the bucket's size.
func (b *retryBudget) success(paid int) {
	if paid == 0 {
		paid = b.cfg.NoRetryIncrement
	}
	b.tokens = min(b.tokens+paid, b.cfg.Tokens)
}
