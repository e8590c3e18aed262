module github.com/openiwarp/openiwarp

go 1.24
