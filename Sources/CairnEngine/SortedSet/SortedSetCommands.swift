enum SortedSetCommands {
    static let all: [Command] = []
}
