module arbrun/compat/gothreads

go 1.19
