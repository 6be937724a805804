@testable import CairnEngine
import Foundation
import Testing

/// The cores cairnd sizes its workers and background jobs by: affinity and cgroup quota.
@Suite struct AvailableCoresTests {
    @Test func cgroupQuotasRoundUpToWholeCores() {
        #expect(AvailableCores.quotaCores(v2: "max 100000\n") == nil)
        #expect(AvailableCores.quotaCores(v2: "150000 100000\n") == 2)
        #expect(AvailableCores.quotaCores(v2: "100000 100000") == 1)
        #expect(AvailableCores.quotaCores(v2: "50000 100000") == 1)
        #expect(AvailableCores.quotaCores(quota: "-1\n", period: "100000\n") == nil)
        #expect(AvailableCores.quotaCores(quota: "400000\n", period: "100000\n") == 4)
        #expect(AvailableCores.quotaCores(v2: "garbage") == nil)
    }

    @Test func cpuListsAreCounted() {
        #expect(AvailableCores.cpuCount(list: "0-1\n") == 2)
        #expect(AvailableCores.cpuCount(list: "0") == 1)
        #expect(AvailableCores.cpuCount(list: "0-3,8,10-11") == 7)
        #expect(AvailableCores.cpuCount(list: "") == nil)
        #expect(AvailableCores.cpuCount(list: "3-1") == nil)
    }

    @Test func theCountIsWithinTheMachines() {
        let online = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        #expect(AvailableCores.count >= 1 && AvailableCores.count <= online)
        #expect(AvailableCores.affinityCount().map { $0 <= online } ?? true)
    }
}
