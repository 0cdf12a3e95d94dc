#include "codegen.hpp"

#include "diag.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

namespace tinyk {

namespace {

using ir::opcode;

class generator {
public:
    generator(ir::function const& f, module const& m) : f_(f), m_(m) {}

    artifact run() {
        order_ = ir::reverse_post_order(f_);
        assign_registers();
        for (std::size_t k = 0; k < order_.size(); ++k) {
            label_[order_[k]] = static_cast<std::int32_t>(a_.size());
            next_ = k + 1 < order_.size() ? order_[k + 1] : nullptr;
            for (auto const& i : order_[k]->instrs) emit_instr(*i);
        }
        for (auto const& [pos, target] : fixups_) a_.code[pos] = label_.at(target);
        for (auto const& [pos, stub] : stub_fixups_) a_.code[pos] = stub_label_.at(stub);

        a_.nregs = static_cast<std::int32_t>(arg_base_ + max_args_);
        a_.nparams = f_.nparams;
        for (int o : f_.origins) a_.inlined.emplace_back(m_.kernels.at(static_cast<std::size_t>(o)).get());
        a_.dialects = ref<dialect_group>(&core_dialects());
        a_.result_type = ref<type const>(f64_type());
        for (int p = 0; p < f_.nparams; ++p) a_.param_types.emplace_back(f64_type());
        return std::move(a_);
    }

private:
    void assign_registers() {
        std::int32_t next = f_.nparams;
        for (ir::block const* b : order_) {
            for (auto const& i : b->instrs) {
                if (i->ty != f64_type()) continue;
                if (i->op == opcode::param) reg_[i.get()] = i->index;
                else reg_[i.get()] = next++;
            }
            // Room for the largest parallel copy on an edge into b's successors.
            for (ir::block const* s : b->succs()) {
                std::size_t phis = 0;
                for (auto const& i : s->instrs) phis += i->op == opcode::phi;
                max_moves_ = std::max(max_moves_, phis);
            }
            for (auto const& i : b->instrs)
                if (i->op == opcode::call) max_args_ = std::max(max_args_, i->args.size());
        }
        temp_base_ = static_cast<std::size_t>(next);
        arg_base_ = temp_base_ + max_moves_;
    }

    std::int32_t reg(ir::instr const* v) const {
        auto it = reg_.find(v);
        if (it == reg_.end()) throw internal_error("codegen: value without a register in '" + f_.name + "'");
        return it->second;
    }

    std::int32_t constant(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        auto [it, fresh] = const_index_.emplace(bits, static_cast<std::int32_t>(a_.constants.size()));
        if (fresh) a_.constants.push_back(v);
        return it->second;
    }

    std::int32_t callee(int kernel_index) {
        auto [it, fresh] = callee_index_.emplace(kernel_index, static_cast<std::int32_t>(a_.callees.size()));
        if (fresh) a_.callees.emplace_back(m_.kernels.at(static_cast<std::size_t>(kernel_index)).get());
        return it->second;
    }

    std::size_t put(std::int32_t op, std::int32_t x, std::int32_t y, std::int32_t z, ir::instr const& src) {
        std::size_t at = a_.code.size();
        a_.code.insert(a_.code.end(), {op, x, y, z});
        a_.lines.push_back(source_map_line(src, f_, m_));
        a_.origins.push_back(src.origin);
        return at;
    }

    // The moves that set s's phis when control comes from b along successor slot `slot`.
    void emit_edge_moves(ir::block const* b, ir::block const* s, std::size_t slot, ir::instr const& src) {
        // Which of s's predecessor entries is this edge: the n-th occurrence of b, where
        // n counts the earlier slots of b's terminator that also lead to s.
        auto const& succs = b->succs();
        std::size_t nth = 0;
        for (std::size_t k = 0; k < slot; ++k) nth += succs[k] == s;
        std::size_t pred = s->preds.size();
        for (std::size_t k = 0, seen = 0; k < s->preds.size(); ++k) {
            if (s->preds[k] != b) continue;
            if (seen++ == nth) {
                pred = k;
                break;
            }
        }
        if (pred == s->preds.size()) throw internal_error("codegen: edge missing from predecessors");
        std::vector<std::pair<std::int32_t, std::int32_t>> moves; // dst <- src
        for (auto const& i : s->instrs) {
            if (i->op != opcode::phi) continue;
            std::int32_t d = reg(i.get()), v = reg(i->args[pred]);
            if (d != v) moves.push_back({d, v});
        }
        bool overlap = false;
        for (auto const& m1 : moves)
            for (auto const& m2 : moves)
                if (m1.first == m2.second) overlap = true;
        if (!overlap) {
            for (auto const& [d, v] : moves) put(bc::mov, d, v, 0, src);
            return;
        }
        for (std::size_t k = 0; k < moves.size(); ++k)
            put(bc::mov, static_cast<std::int32_t>(temp_base_ + k), moves[k].second, 0, src);
        for (std::size_t k = 0; k < moves.size(); ++k)
            put(bc::mov, moves[k].first, static_cast<std::int32_t>(temp_base_ + k), 0, src);
    }

    bool has_phis(ir::block const* s) const {
        return !s->instrs.empty() && s->instrs.front()->op == opcode::phi;
    }

    void jump_to(ir::block const* target, ir::instr const& src) {
        if (target == next_) return;
        std::size_t at = put(bc::jmp, 0, 0, 0, src);
        fixups_.push_back({at + 1, target});
    }

    void emit_instr(ir::instr const& i) {
        auto r = [&](std::size_t k) { return reg(i.args[k]); };
        switch (i.op) {
        case opcode::param:
        case opcode::phi:
            return; // params arrive in r0..; phis are set on the edges
        case opcode::constant: put(bc::loadk, reg(&i), constant(i.imm), 0, i); return;
        case opcode::add: put(bc::add, reg(&i), r(0), r(1), i); return;
        case opcode::sub: put(bc::sub, reg(&i), r(0), r(1), i); return;
        case opcode::mul: put(bc::mul, reg(&i), r(0), r(1), i); return;
        case opcode::div: put(bc::div, reg(&i), r(0), r(1), i); return;
        case opcode::lt: put(bc::lt, reg(&i), r(0), r(1), i); return;
        case opcode::le: put(bc::le, reg(&i), r(0), r(1), i); return;
        case opcode::gt: put(bc::gt, reg(&i), r(0), r(1), i); return;
        case opcode::ge: put(bc::ge, reg(&i), r(0), r(1), i); return;
        case opcode::eq: put(bc::eq, reg(&i), r(0), r(1), i); return;
        case opcode::ne: put(bc::ne, reg(&i), r(0), r(1), i); return;
        case opcode::min: put(bc::min, reg(&i), r(0), r(1), i); return;
        case opcode::max: put(bc::max, reg(&i), r(0), r(1), i); return;
        case opcode::neg: put(bc::neg, reg(&i), r(0), 0, i); return;
        case opcode::not_: put(bc::not_, reg(&i), r(0), 0, i); return;
        case opcode::sqrt: put(bc::sqrt, reg(&i), r(0), 0, i); return;
        case opcode::abs: put(bc::abs, reg(&i), r(0), 0, i); return;
        case opcode::floor: put(bc::floor, reg(&i), r(0), 0, i); return;
        case opcode::assert_: put(bc::assert_, r(0), 0, 0, i); return;
        case opcode::call: {
            for (std::size_t k = 0; k < i.args.size(); ++k)
                put(bc::mov, static_cast<std::int32_t>(arg_base_ + k), r(k), 0, i);
            put(bc::call, reg(&i), callee(i.callee), static_cast<std::int32_t>(arg_base_), i);
            return;
        }
        case opcode::ret: put(bc::ret, r(0), 0, 0, i); return;
        case opcode::br: {
            ir::block const* b = i.parent;
            emit_edge_moves(b, i.succs[0], 0, i);
            jump_to(i.succs[0], i);
            return;
        }
        case opcode::cond_br: {
            ir::block const* b = i.parent;
            ir::block const* t = i.succs[0];
            ir::block const* e = i.succs[1];
            // jz c, (else stub or else block); then-edge; [else stub: moves, jmp else]
            std::size_t jz = put(bc::jz, r(0), 0, 0, i);
            bool else_stub = has_phis(e);
            if (else_stub) stub_fixups_.push_back({jz + 2, &i});
            else fixups_.push_back({jz + 2, e});
            emit_edge_moves(b, t, 0, i);
            if (else_stub) {
                // The stub follows, so the then-edge jumps even when t is the next block.
                std::size_t at = put(bc::jmp, 0, 0, 0, i);
                fixups_.push_back({at + 1, t});
                stub_label_[&i] = static_cast<std::int32_t>(a_.size());
                emit_edge_moves(b, e, 1, i);
                jump_to(e, i);
            } else {
                jump_to(t, i);
            }
            return;
        }
        }
        throw internal_error("codegen: unhandled instruction");
    }

    ir::function const& f_;
    module const& m_;
    artifact a_;
    std::vector<ir::block*> order_;
    ir::block const* next_ = nullptr;
    std::unordered_map<ir::instr const*, std::int32_t> reg_;
    std::size_t max_moves_ = 0, max_args_ = 0, temp_base_ = 0, arg_base_ = 0;
    std::map<std::uint64_t, std::int32_t> const_index_;
    std::map<int, std::int32_t> callee_index_;
    std::unordered_map<ir::block const*, std::int32_t> label_;
    std::vector<std::pair<std::size_t, ir::block const*>> fixups_;
    std::unordered_map<ir::instr const*, std::int32_t> stub_label_;
    std::vector<std::pair<std::size_t, ir::instr const*>> stub_fixups_;
};

} // namespace

artifact generate(ir::function const& f, module const& m) { return generator(f, m).run(); }

std::int32_t source_map_line(ir::instr const& i, ir::function const& f, module const& m) {
    if (i.origin <= 0) return i.line;
    int const from = f.origins.at(static_cast<std::size_t>(i.origin - 1));
    return i.line - m.kernels.at(static_cast<std::size_t>(from))->first_line;
}

} // namespace tinyk
