package db

import "runtime"

func runtimeGosched() { runtime.Gosched() }
