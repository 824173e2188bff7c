/* cma_batch SIZE N REPS: N transfers of SIZE bytes into a forked child, one
 * process_vm_writev each against one call for all N (best of REPS, us per
 * transfer). Session 13: gcc -O2 -o cma_batch cma_batch.c; ./cma_batch 16384 64 200 */
#define _GNU_SOURCE
#include <sys/uio.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  size_t sz=atol(argv[1]); int n=atoi(argv[2]); int reps=atoi(argv[3]);
  char *remote=aligned_alloc(4096,sz*n); memset(remote,0,sz*n);
  char *local=aligned_alloc(4096,sz*n); memset(local,1,sz*n);
  pid_t p=fork(); if(!p){pause();_exit(0);}
  struct iovec *l=malloc(sizeof(*l)*n),*r=malloc(sizeof(*r)*n);
  for(int i=0;i<n;i++){l[i].iov_base=local+i*sz;l[i].iov_len=sz;r[i].iov_base=remote+i*sz;r[i].iov_len=sz;}
  double best1=1e9,bestn=1e9;
  for(int k=0;k<reps;k++){
    double t=now(); for(int i=0;i<n;i++) process_vm_writev(p,&l[i],1,&r[i],1,0); t=now()-t; if(t<best1)best1=t;
    t=now(); ssize_t w=process_vm_writev(p,l,n,r,n,0); t=now()-t; if(t<bestn)bestn=t; if(w!=(ssize_t)(sz*n)) printf("short %zd\n",w);
  }
  printf("%zu x %d: one call each %.3f us/op, one call for all %.3f us/op\n",sz,n,best1/n*1e6,bestn/n*1e6);
  kill(p,9); wait(NULL); return 0;}
