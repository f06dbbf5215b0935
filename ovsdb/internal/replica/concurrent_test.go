package replica

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/model"
)

// TestConcurrentReaders reads while updates are committed (run with -race): a reader must
// see each port whole, with the generation tag of one committed update.
func TestConcurrentReaders(t *testing.T) {
	s := newTestStore(t, Options{})
	mustRead(t, s, base(), true)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if p, ok := s.Port("p1"); !ok || len(p.Interfaces) != 1 {
					t.Errorf("port p1 = %+v", p)
					return
				}
				s.EachOwned(func(table, name string, tags Tags) bool {
					for range tags.All() {
					}
					return true
				})
				s.Each("Interface", func(model.Model) bool { return true })
				_, _ = s.Tags("Port", "p1")
			}
		}()
	}
	for i := range 200 {
		u := sub(fmt.Sprintf(`{"Port": {"P1": {"modify": {"external_ids": ["map", [["gen", "%d"]]]}}}}`, i))
		mustRead(t, s, u, false)
		if i%50 == 0 {
			mustRead(t, s, base(), true)
		}
	}
	close(stop)
	wg.Wait()
}
