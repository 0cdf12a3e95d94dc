#include "ir.hpp"

#include "diag.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace tinyk::ir {

char const* name(opcode op) {
    switch (op) {
    case opcode::param: return "param";
    case opcode::constant: return "const";
    case opcode::add: return "add";
    case opcode::sub: return "sub";
    case opcode::mul: return "mul";
    case opcode::div: return "div";
    case opcode::neg: return "neg";
    case opcode::not_: return "not";
    case opcode::lt: return "lt";
    case opcode::le: return "le";
    case opcode::gt: return "gt";
    case opcode::ge: return "ge";
    case opcode::eq: return "eq";
    case opcode::ne: return "ne";
    case opcode::sqrt: return "sqrt";
    case opcode::abs: return "abs";
    case opcode::floor: return "floor";
    case opcode::min: return "min";
    case opcode::max: return "max";
    case opcode::call: return "call";
    case opcode::phi: return "phi";
    case opcode::assert_: return "assert";
    case opcode::br: return "br";
    case opcode::cond_br: return "cond_br";
    case opcode::ret: return "ret";
    }
    return "?";
}

bool is_terminator(opcode op) { return op == opcode::br || op == opcode::cond_br || op == opcode::ret; }

bool is_pure(opcode op) {
    switch (op) {
    case opcode::call: case opcode::assert_: case opcode::br: case opcode::cond_br: case opcode::ret:
    case opcode::phi: case opcode::param:
        return false;
    default:
        return true;
    }
}

int arity(opcode op) {
    switch (op) {
    case opcode::param: case opcode::constant: case opcode::br: return 0;
    case opcode::neg: case opcode::not_: case opcode::sqrt: case opcode::abs: case opcode::floor:
    case opcode::assert_: case opcode::cond_br: case opcode::ret:
        return 1;
    case opcode::call: case opcode::phi: return -1;
    default: return 2;
    }
}

instr* block::append(std::unique_ptr<instr> i) {
    i->parent = this;
    instrs.push_back(std::move(i));
    return instrs.back().get();
}

instr* block::insert_before_terminator(std::unique_ptr<instr> i) {
    i->parent = this;
    auto pos = instrs.end();
    if (!instrs.empty() && is_terminator(instrs.back()->op)) --pos;
    return instrs.insert(pos, std::move(i))->get();
}

instr* block::insert_phi(std::unique_ptr<instr> i) {
    i->parent = this;
    auto pos = std::find_if(instrs.begin(), instrs.end(), [](auto const& x) { return x->op != opcode::phi; });
    return instrs.insert(pos, std::move(i))->get();
}

std::vector<block*> const& block::succs() const {
    static std::vector<block*> const none;
    instr const* t = terminator();
    return t && is_terminator(t->op) ? t->succs : none;
}

block* function::new_block() {
    blocks.push_back(std::make_unique<block>());
    return blocks.back().get();
}

std::size_t function::instr_count() const {
    std::size_t n = 0;
    for (auto const& b : blocks) n += b->instrs.size();
    return n;
}

std::unique_ptr<instr> make(opcode op, type const* ty, std::vector<instr*> args, int line) {
    auto i = std::make_unique<instr>();
    i->op = op;
    i->ty = ty;
    i->args = std::move(args);
    i->line = line;
    return i;
}

std::unique_ptr<function> function::clone() const {
    auto f = std::make_unique<function>();
    f->name = name;
    f->kernel_index = kernel_index;
    f->nparams = nparams;
    f->first_line = first_line;
    f->origins = origins;
    std::unordered_map<block const*, block*> bmap;
    std::unordered_map<instr const*, instr*> imap;
    for (auto const& b : blocks) bmap[b.get()] = f->new_block();
    for (auto const& b : blocks) {
        block* nb = bmap[b.get()];
        for (auto const& i : b->instrs) {
            auto ni = std::make_unique<instr>(*i);
            imap[i.get()] = nb->append(std::move(ni));
        }
    }
    for (auto const& b : blocks) {
        block* nb = bmap[b.get()];
        for (block* p : b->preds) nb->preds.push_back(bmap.at(p));
        for (auto& i : nb->instrs) {
            for (auto& a : i->args) a = imap.at(a);
            for (auto& s : i->succs) s = bmap.at(s);
        }
    }
    return f;
}

std::vector<block*> reverse_post_order(function const& f) {
    std::vector<block*> post;
    if (f.blocks.empty()) return post;
    std::unordered_map<block const*, bool> seen;
    // Iterative DFS. Successors are visited last-first, so that in the reverse
    // post-order the first successor (the then-branch, the loop body) comes first.
    std::vector<std::pair<block*, std::size_t>> stack{{f.entry(), 0}};
    seen[f.entry()] = true;
    while (!stack.empty()) {
        auto& [b, next] = stack.back();
        auto const& s = b->succs();
        if (next < s.size()) {
            block* c = s[s.size() - 1 - next++];
            if (!seen[c]) {
                seen[c] = true;
                stack.push_back({c, 0});
            }
        } else {
            post.push_back(b);
            stack.pop_back();
        }
    }
    std::reverse(post.begin(), post.end());
    return post;
}

void replace_all_uses(function& f, instr const* from, instr* to) {
    for (auto& b : f.blocks)
        for (auto& i : b->instrs)
            for (auto& a : i->args)
                if (a == from) a = to;
}

void remove_pred(block* succ, block const* pred) {
    // A block may appear twice among the predecessors (cond_br with both edges to it);
    // this removes one occurrence, the last.
    for (std::size_t k = succ->preds.size(); k-- > 0;) {
        if (succ->preds[k] != pred) continue;
        succ->preds.erase(succ->preds.begin() + static_cast<std::ptrdiff_t>(k));
        for (auto& i : succ->instrs)
            if (i->op == opcode::phi) i->args.erase(i->args.begin() + static_cast<std::ptrdiff_t>(k));
        return;
    }
}

bool remove_unreachable_blocks(function& f) {
    auto order = reverse_post_order(f);
    if (order.size() == f.blocks.size()) return false;
    std::unordered_map<block const*, bool> live;
    for (block* b : order) live[b] = true;
    for (auto& b : f.blocks) {
        if (live[b.get()]) continue;
        for (block* s : b->succs())
            if (live[s]) remove_pred(s, b.get());
    }
    f.blocks.erase(std::remove_if(f.blocks.begin(), f.blocks.end(),
                                  [&](auto const& b) { return !live[b.get()]; }),
                   f.blocks.end());
    return true;
}

bool remove_trivial_phis(function& f) {
    bool any = false;
    for (bool changed = true; changed;) {
        changed = false;
        std::unordered_set<instr const*> dead;
        for (auto& b : f.blocks) {
            for (auto& i : b->instrs) {
                if (i->op != opcode::phi) continue;
                instr* same = nullptr;
                bool trivial = true;
                for (instr* a : i->args) {
                    if (a == i.get() || a == same) continue;
                    if (same) {
                        trivial = false;
                        break;
                    }
                    same = a;
                }
                if (!trivial || !same) continue;
                replace_all_uses(f, i.get(), same);
                dead.insert(i.get());
                changed = any = true;
            }
        }
        erase_if(f, [&](instr const& i) { return dead.count(&i) != 0; });
    }
    return any;
}

namespace {

// The text is built in place (no temporary strings, no printf): it is made for
// every kernel of every run, warm ones too, since the keys are computed from it.
struct text_writer {
    std::string s;
    text_writer& operator<<(std::string_view v) {
        s.append(v.data(), v.size());
        return *this;
    }
    text_writer& operator<<(char c) {
        s.push_back(c);
        return *this;
    }
    text_writer& operator<<(long long v) {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, v);
        s.append(buf, static_cast<std::size_t>(r.ptr - buf));
        return *this;
    }
    text_writer& operator<<(int v) { return *this << static_cast<long long>(v); }
    text_writer& operator<<(std::size_t v) { return *this << static_cast<long long>(v); }
    // As printf's "%.17g" (which to_chars with a precision is defined to match).
    void number(double v) {
        char buf[40];
        auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 17);
        s.append(buf, static_cast<std::size_t>(r.ptr - buf));
    }
};

std::string text(function const& f, bool canonical) {
    auto order = reverse_post_order(f);
    std::unordered_map<block const*, int> bnum;
    bnum.reserve(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) bnum[order[k]] = static_cast<int>(k);
    auto block_number = [&](block const* b) {
        auto it = b ? bnum.find(b) : bnum.end();
        return it == bnum.end() ? -1 : it->second;
    };
    // Values are numbered as they are first visited: definitions in block order, and
    // operands that are defined later (phi arguments from a loop's latch) on first use.
    std::unordered_map<instr const*, int> vnum;
    vnum.reserve(f.instr_count());
    int next = 0;
    auto num = [&](instr const* i) {
        auto [it, fresh] = vnum.try_emplace(i, next); // no node made for a value seen before
        if (fresh) ++next;
        return it->second;
    };
    text_writer w;
    w.s.reserve(64 * f.instr_count() + 64);
    w << "kernel " << f.name << '/' << f.nparams << '\n';
    if (!canonical) {
        w << "; first line " << f.first_line;
        if (!f.origins.empty()) {
            w << "; inlined kernel indices";
            for (int o : f.origins) w << ' ' << o;
        }
        w << '\n';
    }
    for (block const* b : order) {
        w << '^' << block_number(b);
        if (!b->preds.empty()) {
            w << " <-";
            for (block const* p : b->preds) w << " ^" << block_number(p);
        }
        w << ":\n";
        for (auto const& ip : b->instrs) {
            instr const& i = *ip;
            w << "  ";
            if (i.ty != void_type()) w << '%' << num(&i) << " = ";
            w << name(i.op);
            switch (i.op) {
            case opcode::param: w << ' ' << i.index; break;
            case opcode::constant:
                w << ' ';
                w.number(i.imm);
                if (!i.sym.empty()) w << " @" << i.sym;
                break;
            case opcode::call: w << " @" << i.sym; break;
            default: break;
            }
            for (std::size_t k = 0; k < i.args.size(); ++k) {
                w << (k ? ", " : " ");
                if (i.op == opcode::phi) w << '[';
                w << '%' << num(i.args[k]);
                if (i.op == opcode::phi) w << ", ^" << block_number(k < b->preds.size() ? b->preds[k] : nullptr) << ']';
            }
            for (std::size_t k = 0; k < i.succs.size(); ++k)
                w << (k || !i.args.empty() ? ", ^" : " ^") << block_number(i.succs[k]);
            w << " : " << i.ty->name();
            if (canonical) {
                w << " @" << (i.line - f.first_line);
            } else {
                w << " line " << i.line;
                if (i.origin) w << " from #" << i.origin;
            }
            w << '\n';
        }
    }
    return std::move(w.s);
}

} // namespace

std::string canonical_text(function const& f) { return text(f, true); }
std::string debug_text(function const& f) { return text(f, false); }

} // namespace tinyk::ir
