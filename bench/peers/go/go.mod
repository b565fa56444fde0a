module arbrun/bench/peers/go

go 1.19
