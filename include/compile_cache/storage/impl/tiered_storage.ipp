// compile_cache: the definitions of storage/tiered_storage.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <cstdlib>

namespace compile_cache {

// (remote_error_of: storage/impl/remote_error.ipp.)

namespace detail {

/// Every tier_worker alive, for the fork handlers; never destroyed (a worker may end
/// after static destruction began).
struct tier_worker_registry {
    std::mutex mutex;
    std::vector<tier_worker*> workers;
    /// In a forked child: the parent's thread objects and condition variables, which can
    /// be neither destroyed nor used here (a std::thread that was not joined terminates
    /// when destroyed; a condition variable the parent's thread waited on may never be
    /// released). Kept reachable, never freed, so that a leak checker (LeakSanitizer at a
    /// child's exit) does not count them as leaks and fail the host's child. Room is made
    /// before the fork (before_fork): the child's handler allocates nothing.
    std::vector<void const*> abandoned;
};
COMPILE_CACHE_DECL tier_worker_registry& the_tier_worker_registry() noexcept;
tier_worker_registry& the_tier_worker_registry() noexcept {
    // made_once, not a static's guard, which a child forked while another thread made the
    // registry would find held for ever. Two threads meeting at the first use may each
    // install the handlers (the second install does nothing) and at_exit (which a second
    // run finds done).
    static std::atomic<tier_worker_registry*> registry{nullptr};
    return made_once(registry, [] {
        auto r = std::make_unique<tier_worker_registry>();
        (void)install_fork_handlers(fork_stage::tier_workers, {&tier_worker::before_fork, &tier_worker::after_fork_in_parent,
                                                               &tier_worker::after_fork_in_child});
        (void)std::atexit(&tier_worker::at_exit);
        return r;
    });
}

tier_worker::tier_worker(std::size_t max_bytes, std::chrono::milliseconds drain, runner run, dropper drop,
                         std::chrono::milliseconds end_grace, std::size_t batch_jobs)
    : max_bytes_(max_bytes), drain_(drain), end_grace_(end_grace),
      batch_jobs_(std::min(std::max<std::size_t>(batch_jobs, 1), batch_max_jobs)), run_(std::move(run)),
      drop_(std::move(drop)) {
    tier_worker_registry& r = the_tier_worker_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.workers.push_back(this);
}

tier_worker::~tier_worker() {
    if (!stop()) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (thread_) {
            lock.unlock();
            thread_->join(); // (its owner did not keep it past stop's bound: the job runs to its end)
            lock.lock();
            thread_.reset();
        }
    }
    std::unique_lock<std::mutex> lock(mutex_);
    for (job const& j : queue_) drop_(j); // none without a thread (or a child's inherited jobs: cleared)
    queue_.clear();
    lock.unlock();
    tier_worker_registry& r = the_tier_worker_registry();
    std::lock_guard<std::mutex> registry_lock(r.mutex);
    r.workers.erase(std::remove(r.workers.begin(), r.workers.end(), this), r.workers.end());
}

bool tier_worker::stop() noexcept {
    try {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!thread_) return true;
        if (!ending_) {
            ending_ = true;
            drain_until_ = std::chrono::steady_clock::now() + drain_;
        }
        wake_->notify_all();
        if (!idle_->wait_until(lock, drain_until_ + end_grace_, [this] { return finished_; })) return false;
        std::unique_ptr<std::thread> thread = std::move(thread_);
        lock.unlock();
        thread->join(); // (it has left its loop: it returns at once)
        return true;
    } catch (...) {
        return false;
    }
}

void tier_worker::keep_for_ever(void const* p) noexcept {
    tier_worker_registry& r = the_tier_worker_registry();
    try {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.abandoned.push_back(p);
    } catch (...) {
    }
}

void tier_worker::at_exit() noexcept {
    tier_worker_registry& r = the_tier_worker_registry();
    std::vector<tier_worker*> workers;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        try {
            workers = r.workers;
        } catch (...) {
            return;
        }
        // Every drain runs at once, not one after another.
        auto const now = std::chrono::steady_clock::now();
        for (tier_worker* w : workers) {
            std::lock_guard<std::mutex> worker_lock(w->mutex_);
            if (w->thread_ && !w->ending_) {
                w->ending_ = true;
                w->drain_until_ = now + w->drain_;
                w->wake_->notify_all();
            }
        }
    }
    // (A worker destroyed meanwhile by another thread is the host's race with exit.)
    for (tier_worker* w : workers) (void)w->stop();
}

bool tier_worker::push(job&& j) noexcept {
    try {
        std::size_t const size = cost(j);
        bool wake = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (ending_ || size > max_bytes_ || queued_bytes_ > max_bytes_ - size) return false;
            if (!thread_) // (it takes no signal: the host's handlers run on the host's threads only)
                thread_ = std::make_unique<std::thread>(thread_without_signals([this] { work(); }));
            queue_.push_back(std::move(j));
            queued_bytes_ += size;
            wake = waiting_; // (a busy thread looks at the queue before it waits: no wake-up call)
        }
        if (wake) wake_->notify_one();
        return true;
    } catch (...) {
        return false;
    }
}

bool tier_worker::wait_idle(std::chrono::milliseconds within) noexcept {
    try {
        std::unique_lock<std::mutex> lock(mutex_);
        return idle_->wait_for(lock, within, [this] { return queue_.empty() && !running_; });
    } catch (...) {
        return false;
    }
}

bool tier_worker::cancel(key const& k, unsigned char kept, std::chrono::milliseconds within) noexcept {
    try {
        std::unique_lock<std::mutex> lock(mutex_);
        for (auto it = queue_.begin(); it != queue_.end();) {
            if (it->k == k && it->kind != kept) {
                queued_bytes_ -= std::min(queued_bytes_, cost(*it));
                it = queue_.erase(it);
            } else {
                ++it;
            }
        }
        return idle_->wait_for(lock, within, [&] {
            return !running_ || std::find(running_keys_.begin(), running_keys_.end(), k) == running_keys_.end();
        });
    } catch (...) {
        return false;
    }
}

bool tier_worker::started() const noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return thread_ != nullptr;
}

bool tier_worker::past_drain() const noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return ending_ && std::chrono::steady_clock::now() >= drain_until_;
}

void tier_worker::work() noexcept {
    std::vector<job>& batch = batch_;
    // Room for a whole batch, made once: taking jobs allocates nothing (when this fails,
    // batches are of what room there is, one job at least).
    try {
        batch.reserve(batch_jobs_);
    } catch (...) {
    }
    std::unique_lock<std::mutex> lock(mutex_);
    try {
        running_keys_.reserve(batch_jobs_);
    } catch (...) {
    }
    std::size_t const room = std::max<std::size_t>(1, std::min(batch.capacity(), running_keys_.capacity()));
    for (;;) {
        std::condition_variable& wake = *wake_;
        waiting_ = true;
        wake.wait(lock, [this] { return (ending_ || !queue_.empty()) && !fork_pending_; });
        waiting_ = false;
        if (queue_.empty()) break; // ending, nothing left
        if (ending_ && std::chrono::steady_clock::now() >= drain_until_) {
            for (job const& j : queue_) drop_(j);
            queue_.clear();
            queued_bytes_ = 0;
            break;
        }
        // The jobs queued, in their order, up to the batch's bounds.
        std::size_t batch_cost = 0;
        try {
            do {
                std::size_t const c = cost(queue_.front());
                running_keys_.push_back(queue_.front().k);
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
                batch_cost += c;
            } while (!queue_.empty() && batch.size() < room && batch.size() < batch_jobs_ &&
                     batch_cost + cost(queue_.front()) <= batch_max_bytes);
        } catch (...) { // (no room for one job: allocation failed; what was taken runs)
            running_keys_.resize(batch.size());
        }
        if (batch.empty()) continue;
        running_ = true;
        lock.unlock();
        run_(batch);
        batch.clear();
        lock.lock();
        running_ = false;
        running_keys_.clear();
        queued_bytes_ -= std::min(queued_bytes_, batch_cost);
        idle_->notify_all(); // (wait_idle and cancel)
    }
    finished_ = true;
    idle_->notify_all();
}

void tier_worker::before_fork() noexcept {
    tier_worker_registry& r = the_tier_worker_registry();
    r.mutex.lock();
    try {
        r.abandoned.reserve(r.abandoned.size() + 3 * r.workers.size()); // (see after_fork_in_child)
    } catch (...) {
    }
    for (tier_worker* w : r.workers) {
        // The thread holds the mutex only between jobs. A job under way holds the storages'
        // and the tier's locks, which a child would inherit held: let it end (boundedly),
        // and let the thread take no new one until the fork is done. A job that does not
        // end in time leaves the child's tier answering without its storages
        // (forked_mid_job).
        std::unique_lock<std::mutex> lock(w->mutex_);
        w->fork_pending_ = true;
        if (w->thread_) {
            try {
                w->idle_->wait_for(lock, fork_wait, [w] { return !w->running_; });
            } catch (...) {
            }
        }
        (void)lock.release(); // held across the fork; the handlers after it unlock it
    }
}

void tier_worker::after_fork_in_parent() noexcept {
    tier_worker_registry& r = the_tier_worker_registry();
    for (tier_worker* w : r.workers) {
        w->fork_pending_ = false;
        w->mutex_.unlock();
        w->wake_->notify_all();
    }
    r.mutex.unlock();
}

void tier_worker::after_fork_in_child() noexcept {
    tier_worker_registry& r = the_tier_worker_registry();
    for (tier_worker* w : r.workers) {
        w->fork_pending_ = false;
        if (w->thread_) {
            // No such thread here: neither joined nor detached, kept (never freed).
            std::thread* const parents_thread = w->thread_.release();
            if (r.abandoned.size() < r.abandoned.capacity()) r.abandoned.push_back(parents_thread);
            if (w->running_) w->forked_mid_job_.store(true, std::memory_order_relaxed);
            if (w->running_ || !w->queue_.empty()) w->forked_with_work_.store(true, std::memory_order_relaxed);
            w->running_ = false;
            w->running_keys_.clear();
            w->waiting_ = false;
            // The parent's thread may have been waiting on them: new ones, the old ones left.
            try {
                auto wake = std::make_unique<std::condition_variable>();
                auto idle = std::make_unique<std::condition_variable>();
                std::condition_variable* const parents_wake = w->wake_.release();
                std::condition_variable* const parents_idle = w->idle_.release();
                if (r.abandoned.size() < r.abandoned.capacity()) r.abandoned.push_back(parents_wake);
                if (r.abandoned.size() < r.abandoned.capacity()) r.abandoned.push_back(parents_idle);
                w->wake_ = std::move(wake);
                w->idle_ = std::move(idle);
            } catch (...) {
            }
        }
        w->queue_.clear(); // the parent's uploads: the parent sends them
        w->queued_bytes_ = 0;
        w->mutex_.unlock();
    }
    r.mutex.unlock();
}

} // namespace detail

} // namespace compile_cache

#endif // COMPILE_CACHE_INCLUDE_IMPL
