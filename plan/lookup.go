package plan

import "sort"

// Lookups by address. The lists are sorted by address, so each is a binary search.

func find[T any](list []T, addr string, key func(*T) string) *T {
	i := sort.Search(len(list), func(i int) bool { return key(&list[i]) >= addr })
	if i < len(list) && key(&list[i]) == addr {
		return &list[i]
	}
	return nil
}

func (p *Plan) Model(addr string) *Model {
	return find(p.Models, addr, func(m *Model) string { return m.Address })
}
func (p *Plan) Router(addr string) *Router {
	return find(p.Routers, addr, func(m *Router) string { return m.Address })
}
func (p *Plan) Tool(addr string) *Tool {
	return find(p.Tools, addr, func(m *Tool) string { return m.Address })
}
func (p *Plan) MCPServer(addr string) *MCPServer {
	return find(p.MCPServers, addr, func(m *MCPServer) string { return m.Address })
}
func (p *Plan) ToolProfile(addr string) *ToolProfile {
	return find(p.ToolProfiles, addr, func(m *ToolProfile) string { return m.Address })
}
func (p *Plan) Policy(addr string) *Policy {
	return find(p.Policies, addr, func(m *Policy) string { return m.Address })
}
func (p *Plan) Recovery(addr string) *Recovery {
	return find(p.Recoveries, addr, func(m *Recovery) string { return m.Address })
}
func (p *Plan) KnowledgeStore(addr string) *Knowledge {
	return find(p.Knowledge, addr, func(m *Knowledge) string { return m.Address })
}
func (p *Plan) Agent(addr string) *Agent {
	return find(p.Agents, addr, func(m *Agent) string { return m.Address })
}
func (p *Plan) BestOfNByAddress(addr string) *BestOfN {
	return find(p.BestOfN, addr, func(m *BestOfN) string { return m.Address })
}

// Budget returns the budget at addr, or DefaultBudget when addr is empty or unknown.
func (p *Plan) Budget(addr string) Budget {
	if b := find(p.Budgets, addr, func(m *Budget) string { return m.Address }); b != nil {
		return *b
	}
	return DefaultBudget()
}

// Sort orders every list by address; the compiler calls it before encoding.
func (p *Plan) Sort() {
	sortBy(p.Models, func(m Model) string { return m.Address })
	sortBy(p.Routers, func(m Router) string { return m.Address })
	sortBy(p.Tools, func(m Tool) string { return m.Address })
	sortBy(p.MCPServers, func(m MCPServer) string { return m.Address })
	sortBy(p.ToolProfiles, func(m ToolProfile) string { return m.Address })
	sortBy(p.Policies, func(m Policy) string { return m.Address })
	sortBy(p.PolicyTests, func(m PolicyTest) string { return m.Address })
	sortBy(p.Budgets, func(m Budget) string { return m.Address })
	sortBy(p.Recoveries, func(m Recovery) string { return m.Address })
	sortBy(p.Knowledge, func(m Knowledge) string { return m.Address })
	sortBy(p.Agents, func(m Agent) string { return m.Address })
	sortBy(p.BestOfN, func(m BestOfN) string { return m.Address })
	sortBy(p.Variables, func(m Variable) string { return m.Name })
	sortBy(p.Files, func(m FileRef) string { return m.Path })
}

func sortBy[T any](list []T, key func(T) string) {
	sort.SliceStable(list, func(i, j int) bool { return key(list[i]) < key(list[j]) })
}
