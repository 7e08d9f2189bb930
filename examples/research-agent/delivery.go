package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// message is an approved brief on its way to the workspace's contacts.
type message struct {
	JobID   string    `json:"job_id"`
	Scope   string    `json:"scope"`
	Subject string    `json:"subject"`
	Body    string    `json:"body"`
	To      []string  `json:"to"`
	SentAt  time.Time `json:"sent_at"`
}

// sender performs the agent's one external effect: sending a brief. Send must
// be idempotent per job (a restart may call it again for a job whose outcome
// was not recorded) and returns a receipt.
type sender interface {
	Send(ctx context.Context, m message) (receipt string, err error)
}

// outboxSender stands in for an e-mail or webhook integration: it writes the
// message to an outbox in the store, once per job.
type outboxSender struct {
	st  store.Store
	now func() time.Time
}

// Send implements sender.
func (s *outboxSender) Send(ctx context.Context, m message) (string, error) {
	m.SentAt = s.now().UTC()
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	if _, _, err := s.st.PutIfAbsent(ctx, outboxKey(m.Scope, m.JobID), b); err != nil {
		return "", err
	}
	return receiptOf(m.JobID), nil
}

func outboxKey(scope, jobID string) string { return store.Key(keyRoot, "outbox", scope, jobID) }

// startDelivery sends the brief of an approved job in the background, so that
// the submit call returns at once; job.sync reports the outcome. It does
// nothing once Shutdown has begun: the next start resumes the delivery.
func (a *app) startDelivery(scope, jobID string) {
	if a.bg.Err() != nil {
		return
	}
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		if err := a.deliver(a.bg, scope, jobID); err != nil && a.bg.Err() == nil {
			a.logger.LogAttrs(a.bg, slog.LevelError, "brief delivery failed", slog.String("job_id", jobID), slog.Any("error", err))
		}
	}()
}

// resumeDeliveries subscribes to rule checkpoint decisions, which resume the
// deliveries parked on a paused checkpoint (onDecision), then restarts the
// deliveries (and billing reports) a previous run left unfinished and forgets
// the rule checkpoint gates of the governed jobs that are over.
func (a *app) resumeDeliveries(ctx context.Context) error {
	a.agent.OnRuleCheckpointDecision(a.onDecision)
	return a.jobs.each(ctx, "", func(j *jobRecord) error {
		unbilled := j.Delivery != nil && !j.Delivery.Billed && a.srv.Studio() != nil
		switch {
		case (j.Status == jobActive && j.Delivery == nil) || unbilled:
			a.startDelivery(j.Scope, j.ID)
		case j.Governed && j.Status != jobAwaiting && j.Status != jobActive:
			a.forgetGate(ctx, j)
		}
		return nil
	})
}

// errStoppedBeforeSend: the job was stopped before its brief went out.
var errStoppedBeforeSend = errors.New("the job was stopped before the brief was sent")

// deliver sends the brief of an approved job once its send delay is over,
// records the delivery, then reports the billable brief to Studio. A job
// stopped during the delay is not sent. A governed job sends it between rule
// checkpoints; one parked on a checkpoint that a previous run left paused
// returns at once, and onDecision starts it again when Studio decides. Once
// a governed job is over, its gate is forgotten.
func (a *app) deliver(ctx context.Context, scope, jobID string) error {
	rec, err := a.jobs.get(ctx, scope, jobID)
	if err != nil {
		return err
	}
	if wait := a.sendWait(rec); wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err() // shutdown: the next start waits for the rest of the delay
		case <-timer.C:
		}
		if rec, err = a.jobs.get(ctx, scope, jobID); err != nil {
			return err
		}
	}
	if rec.Status == jobActive && rec.Delivery == nil {
		if !rec.Governed {
			err = a.sendUngoverned(ctx, rec)
		} else {
			err = a.sendGoverned(ctx, rec)
		}
		switch {
		case errors.Is(err, errAwaitingDecision):
			a.logger.LogAttrs(ctx, slog.LevelInfo, err.Error(), slog.String("job_id", jobID))
			return nil
		case errors.Is(err, errDeliveryActive):
			return nil
		case err != nil:
			return err
		}
		if rec, err = a.jobs.get(ctx, scope, jobID); err != nil {
			return err
		}
		if rec.Status == jobActive && rec.Delivery == nil {
			return fmt.Errorf("the delivery of job %s ended without a recorded outcome", jobID)
		}
	}
	if rec.Governed && rec.Status != jobActive {
		a.forgetGate(ctx, rec)
	}
	return a.bill(ctx, rec) // nothing to bill when the brief was not sent
}

// sendWait is how much longer the brief of rec waits before it is sent: the
// rest of the send delay since its approval (nothing once the delay is over,
// without a delay, or for a record without an approval time).
func (a *app) sendWait(rec *jobRecord) time.Duration {
	if a.sendDelay <= 0 || rec.ApprovedAt.IsZero() || rec.Status != jobActive || rec.Delivery != nil {
		return 0
	}
	return max(rec.ApprovedAt.Add(a.sendDelay).Sub(a.now()), 0)
}

// sendUngoverned performs the external effect and records its outcome. The
// sender is idempotent per job, so a delivery interrupted by a restart is
// simply run again.
func (a *app) sendUngoverned(ctx context.Context, rec *jobRecord) error {
	r, err := a.sendBrief(ctx, rec)
	switch {
	case errors.Is(err, errStoppedBeforeSend):
		return nil
	case errors.Is(err, errPublicationWithheld):
		return a.markFailed(ctx, rec, "the campaign's policy forbids publication: the brief was not sent")
	case err != nil && ctx.Err() != nil:
		return ctx.Err() // interrupted by shutdown: resumed at the next start
	case err != nil:
		return errors.Join(err, a.markFailed(ctx, rec, "the brief could not be sent"))
	}
	_, err = a.recordDelivery(ctx, rec, r)
	return err
}

// sendBrief is the external effect: the approved brief to the recipients
// frozen at approval. It refuses a job stopped in the meantime.
func (a *app) sendBrief(ctx context.Context, rec *jobRecord) (sendResult, error) {
	cur, err := a.jobs.get(ctx, rec.Scope, rec.ID)
	if err != nil {
		return sendResult{}, err
	}
	if cur.Status != jobActive {
		return sendResult{}, errStoppedBeforeSend
	}
	if cur.NoPublication {
		return sendResult{}, errPublicationWithheld
	}
	receipt, err := a.sender.Send(ctx, message{JobID: rec.ID, Scope: rec.Scope, Subject: "Brief: " + rec.TopicID, Body: rec.Draft, To: rec.Recipients})
	if err != nil {
		return sendResult{}, err
	}
	return sendResult{Receipt: receipt, Recipients: len(rec.Recipients)}, nil
}

// errPublicationWithheld: the job runs under a campaign whose policy
// forbids publication, so its brief is never sent.
var errPublicationWithheld = errors.New("publication withheld by the campaign's policy")

// receiptOf is the receipt of the outbox message of a job.
func receiptOf(jobID string) string { return "outbox:" + jobID }

// recordDelivery records the sent brief on the job.
func (a *app) recordDelivery(ctx context.Context, rec *jobRecord, r sendResult) (*jobRecord, error) {
	return a.jobs.update(context.WithoutCancel(ctx), rec.Scope, rec.ID, func(j *jobRecord) error {
		if j.Delivery != nil {
			return errUnchanged
		}
		j.Delivery = &delivery{Receipt: r.Receipt, Recipients: r.Recipients, SentAt: a.now().UTC()}
		if j.Status == jobActive {
			j.Status = jobCompleted
		}
		return nil
	})
}

// markFailed fails an active job whose brief was not sent; reason is shown
// to the operator, the cause is logged by the caller.
func (a *app) markFailed(ctx context.Context, rec *jobRecord, reason string) error {
	_, err := a.jobs.update(context.WithoutCancel(ctx), rec.Scope, rec.ID, func(j *jobRecord) error {
		if j.Delivery != nil || j.Status != jobActive {
			return errUnchanged
		}
		j.Status, j.Failure = jobFailed, reason
		return nil
	})
	return err
}

// bill reports the sent brief to Studio once (the idempotency key is the job,
// so a repeated report bills nothing new). Without a Studio account (local
// mode) there is nothing to report.
func (a *app) bill(ctx context.Context, rec *jobRecord) error {
	if rec.Delivery == nil || rec.Delivery.Billed {
		return nil
	}
	_, err := a.srv.Studio().ReportConsumption(ctx, a.agent.Slug(), a.agent.Spec().BillingCatalog, studio.Consumption{
		SKU: skuBrief, Quantity: 1, JobID: rec.ID, CaseID: rec.sendCaseID(),
		OccurredAt: rec.Delivery.SentAt, IdempotencyKey: "brief-" + rec.ID,
	})
	if errors.Is(err, studio.ErrNotAttached) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = a.jobs.update(ctx, rec.Scope, rec.ID, func(j *jobRecord) error {
		if j.Delivery == nil || j.Delivery.Billed {
			return errUnchanged
		}
		j.Delivery.Billed = true
		return nil
	})
	return err
}
