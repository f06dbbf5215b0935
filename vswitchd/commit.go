package vswitchd

import (
	"encoding/json"
	"time"

	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// batchCommitted is the writer's Options.OnBatch: it reports the batch to the Observer.
func (d *Daemon) batchCommitted(size int, committed, applied time.Duration, err error) {
	if d.opts.Observer != nil {
		d.opts.Observer.BatchCommitted(size, committed, applied, err)
	}
}

// settle is the writer's Options.Settle. It records, for each request, what OVSDB holds now:
// an ensured port that exists with the API's tags becomes (or stays) an API object, a deleted
// port that is gone stops being one.
func (d *Daemon) settle(reqs []writer.PortRequest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range reqs {
		tags, present := d.c.Tags("Port", r.Spec.Name)
		switch {
		case r.Delete && !present:
			delete(d.ports, r.Spec.Name)
			d.objVer++
		case !r.Delete && present && tags[OriginKey] == string(OriginAPI) && tags[SpecKey] == r.Spec.ExternalIDs[SpecKey]:
			// The spec key round-trips the API's view of the port exactly.
			var sp storedPort
			if err := unmarshalSpec(tags[SpecKey], &sp); err == nil {
				d.ports[r.Spec.Name] = newAPIPort(sp)
				d.objVer++
			}
		}
	}
}

func unmarshalSpec(s string, v any) error { return json.Unmarshal([]byte(s), v) }
