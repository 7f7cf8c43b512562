print("mux-bench: placeholder")
