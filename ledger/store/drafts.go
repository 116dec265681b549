package store

import (
	"io"
	"runtime"
	"sync"

	"github.com/agentledger/agentledger/ledger"
)

// draftChunk is how many lines one worker of ReadDrafts prepares at a time.
const draftChunk = 256

// ReadDrafts reads NDJSON event lines (see ledger.ParseEvent) and prepares each,
// on all CPUs, returning the drafts in input order. A line that does not
// prepare is listed in bad (an error naming its line number), in line
// order; the other lines are still read, so one run reports every bad
// line. err is a failure to read, or a line over the size limit.
func ReadDrafts(r io.Reader, lim ledger.Limits, now int64) (drafts []*ledger.Draft, bad []error, err error) {
	type chunk struct {
		lines [][]byte
		nums  []int
		out   []*ledger.Draft
		bad   []error
		done  chan struct{}
	}
	work := make(chan *chunk)
	var order []*chunk
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				c.out = make([]*ledger.Draft, 0, len(c.lines))
				for i, line := range c.lines {
					d, err := ledger.ParseDraft(line, lim, now)
					if err != nil {
						c.bad = append(c.bad, ledger.AtLine(err, c.nums[i]))
						continue
					}
					c.out = append(c.out, d)
				}
				close(c.done)
			}
		}()
	}
	cur := &chunk{done: make(chan struct{})}
	send := func() {
		order = append(order, cur)
		work <- cur
		cur = &chunk{done: make(chan struct{})}
	}
	err = ledger.ReadLines(r, lim, func(line []byte, n int) error {
		cur.lines = append(cur.lines, append([]byte(nil), line...))
		cur.nums = append(cur.nums, n)
		if len(cur.lines) == draftChunk {
			send()
		}
		return nil
	})
	if len(cur.lines) > 0 {
		send()
	}
	close(work)
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range order {
		drafts = append(drafts, c.out...)
		bad = append(bad, c.bad...)
	}
	return drafts, bad, nil
}
