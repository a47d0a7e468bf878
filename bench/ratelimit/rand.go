package main

import "math/rand/v2"

func randFor(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 99)) }
