print("cairnd")
