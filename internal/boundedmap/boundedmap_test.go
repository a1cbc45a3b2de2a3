package boundedmap

import (
	"sync"
	"testing"
)

func TestAFullMapStartsOverAndKeepsTheNewEntry(t *testing.T) {
	c := New[string, int](2)
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("a", 10) // an existing key is replaced, nothing dropped
	if v, ok := c.Get("a"); !ok || v != 10 || c.Len() != 2 {
		t.Fatalf("a = %d, %v; len %d", v, ok, c.Len())
	}
	c.Put("c", 3)
	if _, ok := c.Get("a"); ok {
		t.Error("a survived the reset")
	}
	if v, ok := c.Get("c"); !ok || v != 3 || c.Len() != 1 {
		t.Fatalf("after the reset: c = %d, %v; len %d", v, ok, c.Len())
	}
}

func TestANilMapKeepsNothing(t *testing.T) {
	var c *Map[string, int]
	c.Put("a", 1)
	if _, ok := c.Get("a"); ok || c.Len() != 0 {
		t.Fatal("a nil map kept an entry")
	}
}

func TestConcurrentUseStaysWithinTheBound(t *testing.T) {
	c := New[int, int](50)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				c.Put(g*1000+i, i)
				c.Get(i)
			}
		}()
	}
	wg.Wait()
	if n := c.Len(); n < 1 || n > 50 {
		t.Fatalf("len %d, want 1..50", n)
	}
}
