print("cairn-cli")
