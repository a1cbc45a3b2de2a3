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

// A Map bounded by size starts over when a value would pass the bound,
// counts a replaced value once, and keeps no value larger than the bound.
func TestASizedMapStartsOverAtItsBound(t *testing.T) {
	c := NewSized[string, []byte](10, func(v []byte) int { return len(v) })
	c.Put("a", []byte("1234"))
	c.Put("b", []byte("5678"))
	c.Put("a", []byte("12")) // replaced: 2+4, nothing dropped
	if c.Len() != 2 || c.Size() != 6 {
		t.Fatalf("len %d size %d, want 2 and 6", c.Len(), c.Size())
	}
	c.Put("c", []byte("abcde")) // 6+5 > 10: starts over
	if _, ok := c.Get("b"); ok {
		t.Error("b survived the reset")
	}
	if v, ok := c.Get("c"); !ok || string(v) != "abcde" || c.Len() != 1 || c.Size() != 5 {
		t.Fatalf("after the reset: c = %q, %v; len %d size %d", v, ok, c.Len(), c.Size())
	}
	c.Put("big", make([]byte, 11))
	if _, ok := c.Get("big"); ok || c.Len() != 1 || c.Size() != 5 {
		t.Errorf("a value over the bound was kept, or dropped the others: len %d size %d", c.Len(), c.Size())
	}
}
